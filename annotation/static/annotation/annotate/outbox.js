// The outbox: answers not yet sent, kept in localStorage before anything is sent, so they
// survive reloads, closed tabs and lost networks. It is flushed oldest first, one at a time, with
// retries and backoff. Each answer carries a client_id made once, when it is given, so a retry
// can never create a second judgment (the server deduplicates by client_id). Other tabs of the
// same annotator and task share it: it is always re-read from storage before it is sent.
import { load, save } from "./storage.js";

const FIRST_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30000;

export function newClientId() {
  if (window.crypto && typeof window.crypto.randomUUID === "function") {
    return window.crypto.randomUUID();
  }
  const b = new Uint8Array(16);
  window.crypto.getRandomValues(b);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.prototype.map.call(b, (x) => (x + 0x100).toString(16).slice(1));
  return h.slice(0, 4).join("") + "-" + h.slice(4, 6).join("") + "-" + h.slice(6, 8).join("") +
    "-" + h.slice(8, 10).join("") + "-" + h.slice(10).join("");
}

function payloadOf(entry) {
  return {client_id: entry.client_id, token: entry.token, answer: entry.answer,
          justification: entry.justification, seconds_spent: entry.seconds_spent};
}

// The server refused the answer for good (e.g. the item is no longer asked for): a 4xx other
// than a timeout, throttling or an ended session, which are worth retrying.
function refusedForGood(status) {
  return status >= 400 && status < 500 && status !== 408 && status !== 429 &&
    status !== 401 && status !== 403;
}

export class Outbox {
  // `graceMs`: how long an answer waits before it is sent (so that an undo needs no round trip).
  // `hooks` are told how each send ends:
  //   sent(entry, result)    stored by the server (201) or already there (200)
  //   refused(entry, result) refused for good, dropped from the outbox
  //   unsent(result)         not sent (result null: no network); retried after a backoff
  //   emptied()              nothing (left) to send
  constructor({api, storage, key, graceMs, hooks}) {
    this.api = api;
    this.storage = storage;
    this.key = key;
    this.graceMs = graceMs;
    this.hooks = hooks;
    this.entries = load(storage, key);
    this.flushing = false;
    this.inFlight = null;      // client_id being sent
    this.backoff = FIRST_BACKOFF_MS;
    this.failedSends = 0;      // since the last successful send
    this.timer = null;
  }

  get length() { return this.entries.length; }

  // Answers cannot be sent right now (what the page tells the annotator).
  get offline() { return navigator.onLine === false || this.failedSends > 0; }

  reload() { this.entries = load(this.storage, this.key); }

  save() { save(this.storage, this.key, this.entries); }

  add(entry) {
    this.reload();  // another tab may have changed it
    this.entries.push(entry);
    this.save();
  }

  drop(clientId) {
    this.entries = load(this.storage, this.key).filter((a) => a.client_id !== clientId);
    this.save();
  }

  find(clientId) { return this.entries.find((a) => a.client_id === clientId); }

  answeredTokens() { return new Set(this.entries.map((a) => a.token)); }

  // The network is back: send at once, without the backoff left from the failures.
  online() {
    this.backoff = FIRST_BACKOFF_MS;
    this.flush(true);
  }

  // Send the oldest answer (`now === true`: even inside its grace period); each send that ends
  // well or for good is followed by the next (the hooks call `flush` again).
  flush(now) {
    if (this.flushing) { return; }
    // Another tab may have sent some: always work from storage.
    this.reload();
    if (!this.entries.length) { this.hooks.emptied(); return; }
    const entry = this.entries[0];
    const wait = (entry.queued_at || 0) + this.graceMs - Date.now();
    if (now !== true && !entry.beaconed && wait > 0) { this.schedule(wait); return; }
    this.flushing = true;
    this.inFlight = entry.client_id;
    this.api.post("answers", payloadOf(entry)).then((result) => {
      this.flushing = false;
      this.inFlight = null;
      if (result.status === 200 || result.status === 201) {
        this.failedSends = 0;
        this.backoff = FIRST_BACKOFF_MS;
        this.drop(entry.client_id);
        this.hooks.sent(entry, result);
        return;
      }
      if (refusedForGood(result.status)) {
        this.drop(entry.client_id);
        this.hooks.refused(entry, result);
        return;
      }
      this.retryLater(result);
    }, () => {
      this.flushing = false;
      this.inFlight = null;
      this.retryLater(null);
    });
  }

  // The page is going away: send everything without waiting for answers. The entries stay in
  // the outbox (marked) and are sent again by the next page; the server deduplicates.
  sendAllNow() {
    if (!this.entries.length) { return; }
    this.entries.forEach((entry) => {
      entry.beaconed = true;
      try {
        this.api.post("answers", payloadOf(entry), {keepalive: true})
          .catch(() => { /* resent by the next page */ });
      } catch (e) { /* resent by the next page */ }
    });
    this.save();
  }

  schedule(ms) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), ms);
  }

  retryLater(result) {
    this.failedSends += 1;
    this.hooks.unsent(result);
    this.schedule(this.backoff);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
  }
}
