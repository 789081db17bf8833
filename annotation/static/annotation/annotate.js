// The annotator page: one item at a time, answered with one key, never lost, never sent twice.
//
// Items are claimed ahead (the current one and those prefetched: as many as the server lets one
// annotator hold, `config.prefetch`) so the next one shows at once.
// Answers go into an outbox in localStorage before anything is sent; the outbox is flushed with
// retries and backoff and survives reloads. Each answer carries a client_id made once, when it is
// given, so a retry can never create a second judgment (the server deduplicates by client_id).
// Held leases are kept in sessionStorage so a reload shows the same item while its lease holds.
// Every item text is written with textContent: payload text is data, never markup.
(function () {
  "use strict";

  var configNode = document.getElementById("ann-config");
  if (!configNode) { return; }
  var config = JSON.parse(configNode.textContent);

  // The server's limit of live leases per annotator (ANNOTATION_MAX_CLAIM): current + ahead.
  var PREFETCH = Math.max(1, config.prefetch || 1);
  var RETRY_EMPTY_MS = 15000;     // empty queue / paused: ask again this often
  var MAX_BACKOFF_MS = 30000;
  var MAX_SECONDS = 3600;
  // An answer waits this long in the outbox before it is sent, so that `u` right after a
  // mistaken key takes it back locally, without a round trip (the server can take it back too,
  // within its undo window). It is in localStorage meanwhile, and sent at once if the page goes
  // away.
  var UNDO_GRACE_MS = 2000;

  var el = {
    item: document.getElementById("ann-item"),
    screen: document.getElementById("ann-screen"),
    screenText: document.getElementById("ann-screen-text"),
    screenRetry: document.getElementById("ann-screen-retry"),
    progress: document.getElementById("ann-progress"),
    outbox: document.getElementById("ann-outbox"),
    message: document.getElementById("ann-message"),
    question: document.getElementById("ann-question"),
    justification: document.getElementById("ann-justification"),
    help: document.getElementById("ann-help"),
    answers: document.getElementById("ann-answers")
  };

  var outboxKey = "ann-outbox:" + config.user + ":" + config.slug;
  var heldKey = "ann-held:" + config.user + ":" + config.slug;
  var historyKey = "ann-history:" + config.user + ":" + config.slug;

  var held = [];          // assignments held, held[0] is shown: {token, expires_at, display}
  var shownAt = null;     // when held[0] was shown (ms)
  var shownToken = null;
  var progress = null;    // last progress from the server
  var flushing = false;
  var inFlight = null;    // client_id being sent
  var backoff = 1000;
  var flushTimer = null;
  var claimTimer = null;
  var claiming = null;    // promise of the running claim
  var heartbeatTimer = null;
  var heartbeatDue = Infinity;
  var leaseMs = 90000;
  var status = "loading"; // loading | item | empty | daily_cap | paused | closed | error
  var failedSends = 0;

  // --- storage -----------------------------------------------------------------------------

  function load(storage, key) {
    try { return JSON.parse(storage.getItem(key) || "[]"); } catch (e) { return []; }
  }
  function save(storage, key, value) {
    try { storage.setItem(key, JSON.stringify(value)); } catch (e) { /* quota: keep in memory */ }
  }
  var outbox = load(window.localStorage, outboxKey);
  // Answers given on this page, newest last: what `u` can undo.
  var history = load(window.sessionStorage, historyKey);

  function saveOutbox() { save(window.localStorage, outboxKey, outbox); }
  function saveHeld() { save(window.sessionStorage, heldKey, held); }
  function saveHistory() { save(window.sessionStorage, historyKey, history.slice(-20)); }

  function newClientId() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      return window.crypto.randomUUID();
    }
    var b = new Uint8Array(16);
    window.crypto.getRandomValues(b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    var h = Array.prototype.map.call(b, function (x) { return (x + 0x100).toString(16).slice(1); });
    return h.slice(0, 4).join("") + "-" + h.slice(4, 6).join("") + "-" + h.slice(6, 8).join("") +
      "-" + h.slice(8, 10).join("") + "-" + h.slice(10).join("");
  }

  // --- network -----------------------------------------------------------------------------

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta && meta.content) { return meta.content; }
    var m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  function api(method, path, body, options) {
    var init = {
      method: method,
      credentials: "same-origin",
      headers: {"Accept": "application/json", "X-CSRFToken": csrfToken()}
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (options && options.keepalive) { init.keepalive = true; }
    return fetch(config.api + path, init).then(function (response) {
      if (response.status === 204) { return {status: 204, data: null}; }
      return response.json().then(function (data) {
        return {status: response.status, data: data};
      }, function () { return {status: response.status, data: null}; });
    });
  }

  function errorText(result, fallback) {
    var error = result && result.data && result.data.error;
    return (error && error.message) || fallback;
  }

  // --- rendering ---------------------------------------------------------------------------

  function node(tag, text, className) {
    var n = document.createElement(tag);
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    if (className) { n.className = className; }
    return n;
  }

  function rowsTable(rows, className) {
    var table = node("table", null, "grid " + (className || "ann-table"));
    var body = node("tbody");
    rows.forEach(function (row) {
      var tr = node("tr");
      tr.appendChild(node("th", row.label || row.field, "field-name")).scope = "row";
      tr.appendChild(node("td", row.value));
      body.appendChild(tr);
    });
    table.appendChild(body);
    return table;
  }

  function renderDisplay(display) {
    var box = document.createDocumentFragment();
    var layout = display && display.layout;
    if (layout === "pair") {
      var table = node("table", null, "grid pair");
      var head = node("thead");
      var hr = node("tr");
      hr.appendChild(node("th", "Field"));
      hr.appendChild(node("th", (display.titles || [])[0] || "Left"));
      hr.appendChild(node("th", (display.titles || [])[1] || "Right"));
      hr.appendChild(node("th", "", "ann-diff-mark"));
      head.appendChild(hr);
      table.appendChild(head);
      var body = node("tbody");
      (display.rows || []).forEach(function (row) {
        var tr = node("tr", null, row.differs ? "differs" : "");
        var th = node("th", row.label || row.field, "field-name");
        th.scope = "row";
        tr.appendChild(th);
        tr.appendChild(node("td", row.left));
        tr.appendChild(node("td", row.right));
        var mark = node("td", row.differs ? "≠" : "", "ann-diff-mark");
        if (row.differs) { mark.setAttribute("aria-label", "differs"); }
        tr.appendChild(mark);
        body.appendChild(tr);
      });
      table.appendChild(body);
      box.appendChild(table);
      if (display.extra && display.extra.length) { box.appendChild(rowsTable(display.extra)); }
    } else if (layout === "table") {
      box.appendChild(rowsTable(display.rows || []));
    } else if (layout === "text") {
      if (display.label) { box.appendChild(node("p", display.label, "ann-text-label muted")); }
      var p = node("p", null, "ann-text");
      (display.segments || []).forEach(function (segment) {
        p.appendChild(node(segment.mark ? "mark" : "span", segment.text));
      });
      box.appendChild(p);
      if (display.extra && display.extra.length) { box.appendChild(rowsTable(display.extra)); }
    } else {
      var value = node("p", null, "item-value");
      value.appendChild(node("code", display && display.value !== undefined ? display.value : ""));
      box.appendChild(value);
    }
    return box;
  }

  function setButtons(enabled) {
    el.answers.querySelectorAll("button[data-answer]").forEach(function (b) {
      b.disabled = !enabled;
    });
    el.answers.querySelector('[data-action="undo"]').disabled = !canUndo();
  }

  function showCurrent() {
    var current = held[0];
    if (!current) { return false; }
    status = "item";
    el.screen.hidden = true;
    el.item.hidden = false;
    el.item.replaceChildren(renderDisplay(current.display));
    el.item.setAttribute("data-token", current.token);
    if (shownToken !== current.token) {
      shownToken = current.token;
      shownAt = Date.now();
    }
    setButtons(true);
    if (!el.justification.matches(":focus")) { el.item.focus({preventScroll: false}); }
    return true;
  }

  var SCREENS = {
    loading: "Loading the next item…",
    empty: "Nothing to verify right now.",
    daily_cap: "You have reached today's answer limit for this task. Thank you!",
    paused: "Your answers for this task are paused for review by its organizers.",
    closed: "This task is closed: there is nothing left to verify.",
    error: "The queue could not be reached."
  };

  function showScreen(kind, message) {
    status = kind;
    shownToken = null;
    el.item.hidden = true;
    el.item.removeAttribute("data-token");
    el.screen.hidden = false;
    el.screen.setAttribute("data-status", kind);
    el.screenText.textContent = message || SCREENS[kind] || SCREENS.error;
    el.screenRetry.hidden = !(kind === "empty" || kind === "paused" || kind === "error");
    if (kind === "loading") { el.screen.setAttribute("aria-busy", "true"); }
    else { el.screen.removeAttribute("aria-busy"); }
    setButtons(false);
    if (!el.justification.matches(":focus")) { el.screen.focus(); }
  }

  function say(text) { el.message.textContent = text || ""; }

  function renderProgress() {
    if (!progress) { return; }
    var parts = ["Answered today: " + progress.answered_today];
    if (progress.daily_cap !== null && progress.daily_cap !== undefined) {
      parts[0] += " of " + progress.daily_cap;
    }
    if (progress.remaining !== null && progress.remaining !== undefined) {
      parts.push("remaining in the queue: " + progress.remaining);
    }
    el.progress.textContent = parts.join(" · ");
  }

  function renderOutbox() {
    var waiting = outbox.length;
    var offline = navigator.onLine === false || failedSends > 0;
    el.outbox.setAttribute("data-waiting", String(waiting));
    // Answers inside their undo grace period are not news; answers that cannot be sent are.
    el.outbox.hidden = waiting === 0 || !offline;
    el.outbox.textContent = waiting === 0 ? "" : "offline — " + waiting +
      (waiting === 1 ? " answer" : " answers") + " waiting to be sent";
  }

  function setProgress(p) {
    if (p) { progress = p; renderProgress(); }
  }

  // --- claiming and leases -----------------------------------------------------------------

  function answeredTokens() {
    var tokens = {};
    outbox.forEach(function (a) { tokens[a.token] = true; });
    return tokens;
  }

  function addAssignments(list) {
    var known = {};
    var answered = answeredTokens();
    held.forEach(function (a) { known[a.token] = true; });
    (list || []).forEach(function (a) {
      if (a && a.token && !known[a.token] && !answered[a.token]) {
        known[a.token] = true;
        held.push(a);
        var ms = Date.parse(a.expires_at) - Date.now();
        if (ms > 3000) { leaseMs = Math.min(ms, 600000); }
        if (Date.now() + Math.max(2000, leaseMs / 3) < heartbeatDue) { scheduleHeartbeat(); }
      }
    });
    saveHeld();
  }

  function claim() {
    if (claiming) { return claiming; }
    if (held.length >= PREFETCH) { return Promise.resolve(); }
    clearTimeout(claimTimer);
    claiming = api("POST", "tasks/" + config.slug + "/claim",
                   {count: PREFETCH, holding: held.map(function (a) { return a.token; })})
      .then(function (result) {
        var data = result.data || {};
        if (result.status !== 200) {
          if (!held.length) { showScreen("error", errorText(result, SCREENS.error)); }
          claimTimer = setTimeout(claim, RETRY_EMPTY_MS);
          return;
        }
        setProgress(data.progress);
        if (data.question) { el.question.textContent = data.question; }
        addAssignments(data.assignments);
        // The server counts the leases of answers still in the outbox against this
        // annotator's limit: short of items, send them now rather than after the grace.
        var waitingForOutbox = data.status === "ok" && held.length < PREFETCH &&
          outbox.length > 0;
        if (waitingForOutbox) { flush(true); }
        if (held.length) {
          if (status !== "item" || shownToken !== held[0].token) { showCurrent(); }
        } else if (waitingForOutbox) {
          showScreen("loading");
        } else {
          showScreen(data.status === "ok" ? "empty" : data.status, data.message);
        }
        if (!held.length && data.status !== "closed" && data.status !== "daily_cap") {
          claimTimer = setTimeout(claim, RETRY_EMPTY_MS);
        }
        return data.status === "ok" && (data.assignments || []).length > 0;
      }, function () {
        if (!held.length) { showScreen("error", "The network is unavailable; retrying…"); }
        claimTimer = setTimeout(claim, RETRY_EMPTY_MS);
      })
      .then(function (gotSome) {
        claiming = null;
        // Answers given while the claim was out: top up again.
        if (gotSome && held.length < PREFETCH) { claim(); }
      }, function () { claiming = null; });
    return claiming;
  }

  // Leases are renewed every third of their length, so two beats may be lost in a row.
  function scheduleHeartbeat() {
    clearTimeout(heartbeatTimer);
    var delay = Math.max(2000, leaseMs / 3);
    heartbeatDue = Date.now() + delay;
    heartbeatTimer = setTimeout(heartbeat, delay);
  }

  function heartbeat() {
    clearTimeout(heartbeatTimer);
    var tokens = held.map(function (a) { return a.token; });
    var next = scheduleHeartbeat;
    if (!tokens.length) { next(); return Promise.resolve(); }
    return api("POST", "assignments/heartbeat", {tokens: tokens}).then(function (result) {
      if (result.status === 200 && result.data) { applyHeartbeat(result.data.assignments); }
      next();
    }, next);
  }

  function applyHeartbeat(list) {
    var byToken = {};
    (list || []).forEach(function (a) { byToken[a.token] = a; });
    var before = held.length ? held[0].token : null;
    held = held.filter(function (a) {
      var beat = byToken[a.token];
      if (beat && beat.valid === false) { return false; }
      if (beat && beat.expires_at) { a.expires_at = beat.expires_at; }
      return true;
    });
    saveHeld();
    if (before && (!held.length || held[0].token !== before)) {
      say("That item is no longer yours (it was held too long, or your work was paused); " +
          "here is another.");
      if (held.length) { showCurrent(); } else { showScreen("loading"); }
    }
    if (held.length < PREFETCH) { claim(); }
  }

  function release(tokens) {
    if (!tokens.length) { return; }
    try {
      api("POST", "assignments/release", {tokens: tokens}, {keepalive: true})
        .catch(function () { /* the lease simply expires */ });
    } catch (e) { /* page going away */ }
  }

  // --- answering and the outbox --------------------------------------------------------------

  function answer(value) {
    if (status !== "item" || !held.length) { return; }
    var current = held.shift();
    var seconds = shownAt ? (Date.now() - shownAt) / 1000 : null;
    if (seconds !== null && seconds > MAX_SECONDS) { seconds = null; }
    var entry = {
      client_id: newClientId(),
      token: current.token,
      answer: value,
      justification: el.justification.value.trim().slice(0, 500),
      seconds_spent: seconds === null ? null : Math.round(seconds * 10) / 10,
      assignment: current,
      queued_at: Date.now()
    };
    outbox = load(window.localStorage, outboxKey);  // another tab may have changed it
    outbox.push(entry);
    saveOutbox();
    history.push({client_id: entry.client_id, sent: false});
    saveHistory();
    saveHeld();
    el.justification.value = "";
    shownToken = null;
    say("");
    if (!showCurrent()) { showScreen("loading"); }
    renderOutbox();
    flush();
    claim();
  }

  function payloadOf(entry) {
    return {client_id: entry.client_id, token: entry.token, answer: entry.answer,
            justification: entry.justification, seconds_spent: entry.seconds_spent};
  }

  function scheduleFlush(ms) {
    clearTimeout(flushTimer);
    flushTimer = setTimeout(flush, ms);
  }

  function markSent(clientId, answerData) {
    history.forEach(function (h) {
      if (h.client_id === clientId) {
        h.sent = true;
        h.undo_until = answerData && answerData.undo_until;
      }
    });
    saveHistory();
  }

  function dropFromOutbox(clientId) {
    outbox = load(window.localStorage, outboxKey).filter(function (a) { return a.client_id !== clientId; });
    saveOutbox();
  }

  function flush(now) {
    if (flushing) { return; }
    // Another tab may have sent some: always work from storage.
    outbox = load(window.localStorage, outboxKey);
    if (!outbox.length) { renderOutbox(); setButtons(status === "item"); return; }
    var entry = outbox[0];
    var wait = (entry.queued_at || 0) + UNDO_GRACE_MS - Date.now();
    if (now !== true && !entry.beaconed && wait > 0) { scheduleFlush(wait); return; }
    flushing = true;
    inFlight = entry.client_id;
    api("POST", "answers", payloadOf(entry)).then(function (result) {
      flushing = false;
      inFlight = null;
      if (result.status === 200 || result.status === 201) {
        failedSends = 0;
        backoff = 1000;
        dropFromOutbox(entry.client_id);
        var stored = result.data && result.data.answer;
        markSent(entry.client_id, stored);
        if (stored && stored.message) { say(stored.message); }
        setProgress(result.data && result.data.progress);
        renderOutbox();
        setButtons(status === "item");
        afterSend();
        // The server counts the leases of answers still in the outbox against this
        // annotator's limit (and answers against the daily one): top up now they are in.
        if (held.length < PREFETCH) { claim(); }
        return;
      }
      if (result.status >= 400 && result.status < 500 && result.status !== 408 &&
          result.status !== 429 && result.status !== 401 && result.status !== 403) {
        // The server refused this answer for good (e.g. the item is no longer asked for):
        // say so instead of retrying forever.
        dropFromOutbox(entry.client_id);
        history = history.filter(function (h) { return h.client_id !== entry.client_id; });
        saveHistory();
        say("An answer was not recorded: " + errorText(result, "the server refused it") + ".");
        renderOutbox();
        setButtons(status === "item");
        afterSend();
        return;
      }
      if (result.status === 401 || result.status === 403) {
        say("Your session has ended: log in again in another tab; answers wait here meanwhile.");
      }
      retryLater();
    }, function () {
      flushing = false;
      inFlight = null;
      retryLater();
    });
  }

  function afterSend() {
    if (pendingUndo) { var run = pendingUndo; pendingUndo = null; run(); }
    if (outbox.length) { flush(); }
  }

  function sendAllNow() {
    // The page is going away: send everything without waiting for answers. The entries stay
    // in the outbox (marked) and are sent again by the next page; the server deduplicates.
    if (!outbox.length) { return; }
    outbox.forEach(function (entry) {
      entry.beaconed = true;
      try {
        api("POST", "answers", payloadOf(entry), {keepalive: true})
          .catch(function () { /* resent by the next page */ });
      } catch (e) { /* resent by the next page */ }
    });
    saveOutbox();
  }

  function retryLater() {
    failedSends += 1;
    renderOutbox();
    if (pendingUndo) { var run = pendingUndo; pendingUndo = null; run(); }
    scheduleFlush(backoff);
    backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
  }

  // --- undo --------------------------------------------------------------------------------

  var pendingUndo = null;

  function canUndo() { return history.length > 0; }

  function reshow(assignment) {
    if (!assignment) { return; }
    held = held.filter(function (a) { return a.token !== assignment.token; });
    held.unshift(assignment);
    saveHeld();
    shownToken = null;
    showCurrent();
  }

  function undo(afterSendAttempt) {
    var last = history[history.length - 1];
    if (!last) { say("There is no answer to undo."); return; }
    if (inFlight === last.client_id) {
      // Being sent right now: undo on the server once the send settles.
      pendingUndo = undo;
      return;
    }
    var queued = outbox.filter(function (a) { return a.client_id === last.client_id; })[0];
    if (queued && queued.beaconed) {
      // It may have reached the server as the previous page closed: make sure it did, then
      // undo it there (dropping it here could leave the server's copy standing).
      if (afterSendAttempt === true && failedSends > 0) {
        say("Cannot undo while the answer cannot be sent; try again when the network is back.");
        return;
      }
      // Earlier answers go first (in order); this runs again after each send.
      pendingUndo = function () { undo(true); };
      flush(true);
      return;
    }
    if (queued) {
      dropFromOutbox(queued.client_id);
      history.pop();
      saveHistory();
      renderOutbox();
      reshow(queued.assignment);
      el.justification.value = queued.justification || "";
      say("Undone: answer the item again.");
      return;
    }
    api("POST", "answers/" + encodeURIComponent(last.client_id) + "/undo", {}).then(
      function (result) {
        if (result.status === 200 && result.data && result.data.undone) {
          history.pop();
          saveHistory();
          setProgress(result.data.progress);
          if (result.data.assignment) {
            reshow(result.data.assignment);
            say("Undone: answer the item again.");
          } else {
            // A late answer, or work paused: taken back, nothing to answer again.
            say("Undone.");
            setButtons(status === "item");
            if (!held.length) { claim(); }
          }
        } else {
          if (result.status === 409) {
            history = [];
            saveHistory();
          }
          say("Cannot undo: " + errorText(result, "the answer can no longer be changed") + ".");
          setButtons(status === "item");
        }
      },
      function () { say("Cannot undo while offline; try again when the network is back."); });
  }

  // --- help and keys -----------------------------------------------------------------------

  function toggleHelp(show) {
    var open = show === undefined ? el.help.hidden : show;
    el.help.hidden = !open;
    el.answers.querySelector('[data-action="help"]').setAttribute("aria-expanded", String(open));
  }

  el.answers.addEventListener("click", function (event) {
    var button = event.target.closest("button");
    if (!button || button.disabled) { return; }
    if (button.dataset.answer) { answer(button.dataset.answer); }
    else if (button.dataset.action === "undo") { undo(); }
    else if (button.dataset.action === "help") { toggleHelp(); }
  });

  el.justification.addEventListener("keydown", function (event) {
    if (event.key === "Enter" || event.key === "Escape") {
      event.preventDefault();
      (status === "item" ? el.item : el.screen).focus();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) { return; }
    var target = event.target;
    if (target && (target.isContentEditable ||
                   /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) { return; }
    var key = event.key;
    if (key === "Escape") { toggleHelp(false); return; }
    if (key === "?") { event.preventDefault(); toggleHelp(); return; }
    var lower = key.toLowerCase();
    if (lower === "j") { event.preventDefault(); el.justification.focus(); return; }
    if (lower === "u") { event.preventDefault(); undo(); return; }
    var button = el.answers.querySelector('button[data-answer][data-key="' + lower + '"]');
    if (button && !button.disabled) { event.preventDefault(); answer(button.dataset.answer); }
  });

  // --- lifecycle ---------------------------------------------------------------------------

  window.addEventListener("online", function () { backoff = 1000; flush(true); claim(); });
  window.addEventListener("offline", renderOutbox);
  window.addEventListener("storage", function (event) {
    if (event.key === outboxKey) { outbox = load(window.localStorage, outboxKey); renderOutbox(); }
  });
  window.addEventListener("pagehide", function () {
    // Give back the prefetched items; keep the shown one (a reload shows it again while its
    // lease holds; if the tab is closed, the lease simply expires).
    var spare = held.slice(1).map(function (a) { return a.token; });
    release(spare);
    sendAllNow();
    held = held.slice(0, 1);
    saveHeld();
  });
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) { claim(); }
  });

  // Start: show what this tab held before a reload, check it is still ours, top up, flush.
  held = load(window.sessionStorage, heldKey).filter(function (a) {
    return !answeredTokens()[a.token];
  });
  renderOutbox();
  if (held.length) { showCurrent(); }
  setButtons(status === "item");
  (held.length ? heartbeat() : Promise.resolve()).then(function () {
    if (!held.length || held.length < PREFETCH) { claim(); }
    if (!heartbeatTimer) { scheduleHeartbeat(); }
  });
  api("GET", "tasks/" + config.slug + "/progress").then(function (result) {
    if (result.status === 200) { setProgress(result.data); }
  }, function () { /* shown on the next answer */ });
  flush();
}());
