// The annotator's work on one task: answering, undoing, and what the page shows as the outbox
// and the leases report back. It owns the page's state, each part in one object: the leases
// (`Leases`), the unsent answers (`Outbox`), the answers `u` can take back (`AnswerHistory`) and
// the screen (`ItemView`).
import { Api, errorText } from "./api.js";
import { AnswerHistory } from "./history.js";
import { ItemView } from "./item.js";
import { Leases } from "./leases.js";
import { Outbox, newClientId } from "./outbox.js";

// An answer waits this long in the outbox before it is sent, so that `u` right after a mistaken
// key takes it back locally, without a round trip (the server can take it back too, within its
// undo window). It is in localStorage meanwhile, and sent at once if the page goes away.
const UNDO_GRACE_MS = 2000;

export class Annotator {
  // `config`: the page's `ann-config` ({slug, user, api, prefetch}); `elements`: its elements;
  // `local` / `session`: window.localStorage / window.sessionStorage.
  constructor(config, elements, {local, session}) {
    const scope = config.user + ":" + config.slug;
    this.slug = config.slug;
    this.api = new Api(config.api);
    this.history = new AnswerHistory(session, "ann-history:" + scope);
    this.view = new ItemView(elements, {canUndo: () => this.history.canUndo});
    this.outbox = new Outbox({
      api: this.api,
      storage: local,
      key: "ann-outbox:" + scope,
      graceMs: UNDO_GRACE_MS,
      hooks: {
        sent: (entry, result) => this.answerSent(entry, result),
        refused: (entry, result) => this.answerRefused(entry, result),
        unsent: (result) => this.answerUnsent(result),
        emptied: () => { this.renderOutbox(); this.view.refreshButtons(); }
      }
    });
    this.leases = new Leases({
      api: this.api,
      storage: session,
      key: "ann-held:" + scope,
      slug: config.slug,
      // The server's limit of live leases per annotator (ANNOTATION_MAX_CLAIM): current + ahead.
      prefetch: Math.max(1, config.prefetch || 1),
      answered: () => this.outbox.answeredTokens(),
      hooks: {
        claimed: (data) => this.claimed(data),
        claimFailed: (result) => this.claimFailed(result),
        lost: () => this.lost()
      }
    });
    this.pendingUndo = null;  // an undo waiting for the send in flight to settle
  }

  // Show what this tab held before a reload, check it is still ours, top up, flush.
  start() {
    this.leases.restore();
    this.renderOutbox();
    if (this.leases.length) { this.showCurrent(); }
    this.view.refreshButtons();
    (this.leases.length ? this.leases.heartbeat() : Promise.resolve()).then(() => {
      if (this.leases.short) { this.leases.claim(); }
      this.leases.startHeartbeat();
    });
    this.api.get("tasks/" + this.slug + "/progress").then((result) => {
      if (result.status === 200) { this.view.setProgress(result.data); }
    }, () => { /* shown on the next answer */ });
    this.outbox.flush();
  }

  showCurrent() { return this.view.showItem(this.leases.current); }

  renderOutbox() { this.view.renderOutbox(this.outbox.length, this.outbox.offline); }

  // --- what the leases report --------------------------------------------------------------

  claimed(data) {
    const view = this.view;
    view.setProgress(data.progress);
    if (data.question) { view.setQuestion(data.question); }
    // The server counts the leases of answers still in the outbox against this annotator's
    // limit: short of items, send them now rather than after the grace.
    const waitingForOutbox = data.status === "ok" && this.leases.short && this.outbox.length > 0;
    if (waitingForOutbox) { this.outbox.flush(true); }
    if (this.leases.length) {
      if (!view.isShowing(this.leases.current.token)) { this.showCurrent(); }
    } else if (waitingForOutbox) {
      view.showScreen("loading");
    } else {
      view.showScreen(data.status === "ok" ? "empty" : data.status, data.message);
    }
  }

  claimFailed(result) {
    if (this.leases.length) { return; }
    this.view.showScreen("error",
                         result ? errorText(result) : "The network is unavailable; retrying…");
  }

  lost() {
    this.view.say("That item is no longer yours (it was held too long, or your work was " +
                  "paused); here is another.");
    if (!this.showCurrent()) { this.view.showScreen("loading"); }
  }

  // --- answering and what the outbox reports -----------------------------------------------

  answer(value) {
    if (!this.view.showingItem || !this.leases.length) { return; }
    const current = this.leases.take();
    const given = this.view.readAnswer();
    const entry = {
      client_id: newClientId(),
      token: current.token,
      answer: value,
      justification: given.justification,
      seconds_spent: given.seconds_spent,
      assignment: current,
      queued_at: Date.now()
    };
    this.outbox.add(entry);
    this.history.add(entry.client_id);
    this.leases.save();
    this.view.setJustification("");
    this.view.forgetShown();
    this.view.say("");
    if (!this.showCurrent()) { this.view.showScreen("loading"); }
    this.renderOutbox();
    this.outbox.flush();
    this.leases.claim();
  }

  answerSent(entry, result) {
    const stored = result.data && result.data.answer;
    this.history.markSent(entry.client_id, stored);
    if (stored && stored.message) { this.view.say(stored.message); }
    this.view.setProgress(result.data && result.data.progress);
    this.renderOutbox();
    this.view.refreshButtons();
    this.afterSend();
    // The server counts the leases of answers still in the outbox against this annotator's
    // limit (and answers against the daily one): top up now they are in.
    if (this.leases.short) { this.leases.claim(); }
  }

  // The server refused this answer for good (e.g. the item is no longer asked for): say so
  // instead of retrying forever.
  answerRefused(entry, result) {
    this.history.remove(entry.client_id);
    this.view.say("An answer was not recorded: " + errorText(result, "the server refused it") +
                  ".");
    this.renderOutbox();
    this.view.refreshButtons();
    this.afterSend();
  }

  answerUnsent(result) {
    if (result && (result.status === 401 || result.status === 403)) {
      this.view.say("Your session has ended: log in again in another tab; answers wait here " +
                    "meanwhile.");
    }
    this.renderOutbox();
    this.runPendingUndo();
  }

  afterSend() {
    this.runPendingUndo();
    if (this.outbox.length) { this.outbox.flush(); }
  }

  runPendingUndo() {
    if (!this.pendingUndo) { return; }
    const run = this.pendingUndo;
    this.pendingUndo = null;
    run();
  }

  // --- undo --------------------------------------------------------------------------------

  reshow(assignment) {
    if (!assignment) { return; }
    this.leases.putFirst(assignment);
    this.view.forgetShown();
    this.showCurrent();
  }

  undo(afterSendAttempt) {
    const view = this.view;
    const last = this.history.last;
    if (!last) { view.say("There is no answer to undo."); return; }
    if (this.outbox.inFlight === last.client_id) {
      // Being sent right now: undo on the server once the send settles.
      this.pendingUndo = () => this.undo();
      return;
    }
    const queued = this.outbox.find(last.client_id);
    if (queued && queued.beaconed) {
      // It may have reached the server as the previous page closed: make sure it did, then
      // undo it there (dropping it here could leave the server's copy standing).
      if (afterSendAttempt === true && this.outbox.failedSends > 0) {
        view.say("Cannot undo while the answer cannot be sent; try again when the network is " +
                 "back.");
        return;
      }
      // Earlier answers go first (in order); this runs again after each send.
      this.pendingUndo = () => this.undo(true);
      this.outbox.flush(true);
      return;
    }
    if (queued) {
      this.outbox.drop(queued.client_id);
      this.history.pop();
      this.renderOutbox();
      this.reshow(queued.assignment);
      view.setJustification(queued.justification || "");
      view.say("Undone: answer the item again.");
      return;
    }
    this.api.post("answers/" + encodeURIComponent(last.client_id) + "/undo", {}).then(
      (result) => this.undoneOnServer(result),
      () => { view.say("Cannot undo while offline; try again when the network is back."); });
  }

  undoneOnServer(result) {
    const view = this.view;
    if (result.status === 200 && result.data && result.data.undone) {
      this.history.pop();
      view.setProgress(result.data.progress);
      if (result.data.assignment) {
        this.reshow(result.data.assignment);
        view.say("Undone: answer the item again.");
      } else {
        // A late answer, or work paused: taken back, nothing to answer again.
        view.say("Undone.");
        view.refreshButtons();
        if (!this.leases.length) { this.leases.claim(); }
      }
      return;
    }
    if (result.status === 409) { this.history.clear(); }
    view.say("Cannot undo: " + errorText(result, "the answer can no longer be changed") + ".");
    view.refreshButtons();
  }

  // --- the page's life ---------------------------------------------------------------------

  online() {
    this.outbox.online();
    this.leases.claim();
  }

  // Another tab changed the outbox.
  storageChanged(key) {
    if (key !== this.outbox.key) { return; }
    this.outbox.reload();
    this.renderOutbox();
  }

  // The page is going away: give back the prefetched items, send what waits (it stays in the
  // outbox until the next page hears it arrived), keep the item shown for a reload.
  leave() {
    this.leases.release(this.leases.spareTokens());
    this.outbox.sendAllNow();
    this.leases.keepCurrentOnly();
  }

  resume() { this.leases.claim(); }
}
