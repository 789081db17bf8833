// The annotator page: one item at a time, answered with one key, never lost, never sent twice.
//
// This module only wires the page to its parts, ES modules in annotate/ (no build step):
//   api.js        the annotation API: fetch, the CSRF token, error bodies
//   outbox.js     answers not sent yet (localStorage), sent with retries and backoff
//   leases.js     the items held (sessionStorage): claims, prefetch, heartbeats, release
//   item.js       the item shown or a status screen, and the keys and buttons that answer it
//   history.js    the answers `u` can take back (sessionStorage)
//   annotator.js  answering and undoing, and what the page shows as the outbox and leases report
//   storage.js    lists in Web Storage that never break the page
// Each part keeps its state in one object; none is shared through module-level variables. Item
// text is written with textContent only: payload text is data, never markup.
import { Annotator } from "./annotate/annotator.js";

function elements() {
  const byId = (id) => document.getElementById(id);
  return {
    item: byId("ann-item"),
    screen: byId("ann-screen"),
    screenText: byId("ann-screen-text"),
    screenRetry: byId("ann-screen-retry"),
    progress: byId("ann-progress"),
    outbox: byId("ann-outbox"),
    message: byId("ann-message"),
    question: byId("ann-question"),
    justification: byId("ann-justification"),
    help: byId("ann-help"),
    answers: byId("ann-answers")
  };
}

function main() {
  const configNode = document.getElementById("ann-config");
  if (!configNode) { return; }
  const config = JSON.parse(configNode.textContent);
  const annotator = new Annotator(config, elements(), {
    local: window.localStorage,
    session: window.sessionStorage
  });

  annotator.view.listen({
    answer: (value) => annotator.answer(value),
    undo: () => annotator.undo()
  });
  window.addEventListener("online", () => annotator.online());
  window.addEventListener("offline", () => annotator.renderOutbox());
  window.addEventListener("storage", (event) => annotator.storageChanged(event.key));
  window.addEventListener("pagehide", () => annotator.leave());
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) { annotator.resume(); }
  });

  annotator.start();
}

main();
