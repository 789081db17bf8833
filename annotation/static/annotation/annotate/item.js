// What the annotator sees and presses: one item (or a screen saying why there is none), the
// progress, the outbox's state, the message line, the help, and the keys and buttons that give
// an answer. Every item text is written with textContent: payload text is data, never markup.

const MAX_SECONDS = 3600;   // a longer time on one item is not a time spent on it
const MAX_JUSTIFICATION = 500;

export const SCREENS = {
  loading: "Loading the next item…",
  empty: "Nothing to verify right now.",
  daily_cap: "You have reached today's answer limit for this task. Thank you!",
  paused: "Your answers for this task are paused for review by its organizers.",
  closed: "This task is closed: there is nothing left to verify.",
  error: "The queue could not be reached."
};

function node(tag, text, className) {
  const n = document.createElement(tag);
  if (text !== undefined && text !== null) { n.textContent = String(text); }
  if (className) { n.className = className; }
  return n;
}

function rowsTable(rows, className) {
  const table = node("table", null, "grid " + (className || "ann-table"));
  const body = node("tbody");
  rows.forEach((row) => {
    const tr = node("tr");
    if (row.field !== undefined) { tr.dataset.field = row.field; }
    tr.appendChild(node("th", row.label || row.field, "field-name")).scope = "row";
    tr.appendChild(node("td", row.value));
    body.appendChild(tr);
  });
  table.appendChild(body);
  return table;
}

function pairTable(display) {
  const table = node("table", null, "grid pair");
  const head = node("thead");
  const hr = node("tr");
  hr.appendChild(node("th", "Field"));
  hr.appendChild(node("th", (display.titles || [])[0] || "Left"));
  hr.appendChild(node("th", (display.titles || [])[1] || "Right"));
  hr.appendChild(node("th", "", "ann-diff-mark"));
  head.appendChild(hr);
  table.appendChild(head);
  const body = node("tbody");
  (display.rows || []).forEach((row) => {
    const tr = node("tr", null, row.differs ? "differs" : "");
    if (row.field !== undefined) { tr.dataset.field = row.field; }
    const th = node("th", row.label || row.field, "field-name");
    th.scope = "row";
    tr.appendChild(th);
    tr.appendChild(node("td", row.left));
    tr.appendChild(node("td", row.right));
    const mark = node("td", row.differs ? "≠" : "", "ann-diff-mark");
    if (row.differs) { mark.setAttribute("aria-label", "differs"); }
    tr.appendChild(mark);
    body.appendChild(tr);
  });
  table.appendChild(body);
  return table;
}

// One item's `display` (from the server: layout `pair`, `table`, `text` or a single value).
export function renderDisplay(display) {
  const box = document.createDocumentFragment();
  const layout = display && display.layout;
  if (layout === "pair") {
    box.appendChild(pairTable(display));
    if (display.extra && display.extra.length) { box.appendChild(rowsTable(display.extra)); }
  } else if (layout === "table") {
    box.appendChild(rowsTable(display.rows || []));
  } else if (layout === "text") {
    if (display.label) { box.appendChild(node("p", display.label, "ann-text-label muted")); }
    const p = node("p", null, "ann-text");
    (display.segments || []).forEach((segment) => {
      p.appendChild(node(segment.mark ? "mark" : "span", segment.text));
    });
    box.appendChild(p);
    if (display.extra && display.extra.length) { box.appendChild(rowsTable(display.extra)); }
  } else {
    const value = node("p", null, "item-value");
    value.appendChild(node("code", display && display.value !== undefined ? display.value : ""));
    box.appendChild(value);
  }
  return box;
}

export class ItemView {
  // `el`: the page's elements (see annotate.js); `canUndo()`: whether `u` has an answer to take.
  constructor(el, {canUndo}) {
    this.el = el;
    this.canUndo = canUndo;
    this.status = "loading";  // loading | item | empty | daily_cap | paused | closed | error
    this.shownToken = null;   // the item on screen
    this.shownAt = null;      // when it was shown (ms)
    this.progress = null;     // the last progress from the server
  }

  get showingItem() { return this.status === "item"; }

  isShowing(token) { return this.status === "item" && this.shownToken === token; }

  setButtons(enabled) {
    this.el.answers.querySelectorAll("button[data-answer]").forEach((b) => {
      b.disabled = !enabled;
    });
    this.el.answers.querySelector('[data-action="undo"]').disabled = !this.canUndo();
  }

  refreshButtons() { this.setButtons(this.status === "item"); }

  // Show `current` (an assignment); false if there is none.
  showItem(current) {
    const el = this.el;
    if (!current) { return false; }
    this.status = "item";
    el.screen.hidden = true;
    el.item.hidden = false;
    el.item.replaceChildren(renderDisplay(current.display));
    el.item.setAttribute("data-token", current.token);
    if (this.shownToken !== current.token) {
      this.shownToken = current.token;
      this.shownAt = Date.now();
    }
    this.setButtons(true);
    if (!el.justification.matches(":focus")) { el.item.focus({preventScroll: false}); }
    return true;
  }

  // The next item shown is shown anew (its time counts from then), even if it is this one.
  forgetShown() { this.shownToken = null; }

  showScreen(kind, message) {
    const el = this.el;
    this.status = kind;
    this.shownToken = null;
    el.item.hidden = true;
    el.item.removeAttribute("data-token");
    el.screen.hidden = false;
    el.screen.setAttribute("data-status", kind);
    el.screenText.textContent = message || SCREENS[kind] || SCREENS.error;
    el.screenRetry.hidden = !(kind === "empty" || kind === "paused" || kind === "error");
    if (kind === "loading") { el.screen.setAttribute("aria-busy", "true"); }
    else { el.screen.removeAttribute("aria-busy"); }
    this.setButtons(false);
    if (!el.justification.matches(":focus")) { el.screen.focus(); }
  }

  say(text) { this.el.message.textContent = text || ""; }

  setQuestion(text) { this.el.question.textContent = text; }

  setProgress(progress) {
    if (!progress) { return; }
    this.progress = progress;
    const parts = ["Answered today: " + progress.answered_today];
    if (progress.daily_cap !== null && progress.daily_cap !== undefined) {
      parts[0] += " of " + progress.daily_cap;
    }
    if (progress.remaining !== null && progress.remaining !== undefined) {
      parts.push("remaining in the queue: " + progress.remaining);
    }
    this.el.progress.textContent = parts.join(" · ");
  }

  // `waiting` answers in the outbox; `offline`: they cannot be sent now. Answers inside their
  // undo grace period are not news; answers that cannot be sent are.
  renderOutbox(waiting, offline) {
    const box = this.el.outbox;
    box.setAttribute("data-waiting", String(waiting));
    box.hidden = waiting === 0 || !offline;
    box.textContent = waiting === 0 ? "" : "offline — " + waiting +
      (waiting === 1 ? " answer" : " answers") + " waiting to be sent";
  }

  // What goes with an answer on the item shown: the justification typed and the time spent.
  readAnswer() {
    let seconds = this.shownAt ? (Date.now() - this.shownAt) / 1000 : null;
    if (seconds !== null && seconds > MAX_SECONDS) { seconds = null; }
    return {
      justification: this.el.justification.value.trim().slice(0, MAX_JUSTIFICATION),
      seconds_spent: seconds === null ? null : Math.round(seconds * 10) / 10
    };
  }

  setJustification(text) { this.el.justification.value = text; }

  toggleHelp(show) {
    const open = show === undefined ? this.el.help.hidden : show;
    this.el.help.hidden = !open;
    this.el.answers.querySelector('[data-action="help"]').setAttribute("aria-expanded", String(open));
  }

  // Buttons and keys: `answer(value)` for an answer button or its key, `undo()` for `u`.
  listen({answer, undo}) {
    const el = this.el;
    el.answers.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (!button || button.disabled) { return; }
      if (button.dataset.answer) { answer(button.dataset.answer); }
      else if (button.dataset.action === "undo") { undo(); }
      else if (button.dataset.action === "help") { this.toggleHelp(); }
    });

    el.justification.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === "Escape") {
        event.preventDefault();
        (this.status === "item" ? el.item : el.screen).focus();
      }
    });

    document.addEventListener("keydown", (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
      const target = event.target;
      if (target && (target.isContentEditable ||
                     /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) { return; }
      const key = event.key;
      if (key === "Escape") { this.toggleHelp(false); return; }
      if (key === "?") { event.preventDefault(); this.toggleHelp(); return; }
      const lower = key.toLowerCase();
      if (lower === "j") { event.preventDefault(); el.justification.focus(); return; }
      if (lower === "u") { event.preventDefault(); undo(); return; }
      const button = el.answers.querySelector(
        'button[data-answer][data-key="' + CSS.escape(lower) + '"]');
      if (button && !button.disabled) { event.preventDefault(); answer(button.dataset.answer); }
    });
  }
}
