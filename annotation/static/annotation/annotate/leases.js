// The leases this page holds: the item shown and those claimed ahead (as many as the server lets
// one annotator hold, `config.prefetch`), so the next one shows at once. They are kept in
// sessionStorage, so a reload shows the same item while its lease holds, and renewed by a
// heartbeat every third of their length, so two beats may be lost in a row.
import { load, save } from "./storage.js";

export const RETRY_EMPTY_MS = 15000;  // empty queue / paused: ask again this often
const DEFAULT_LEASE_MS = 90000;
const MAX_LEASE_MS = 600000;
const MIN_BEAT_MS = 2000;

export class Leases {
  // `answered()`: the tokens of answers not sent yet (never held again).
  // `hooks` are told what the server said:
  //   claimed(data)        a claim was answered (`data`: the claim's body); the leases are in
  //   claimFailed(result)  a claim failed (result null: no network); it is retried
  //   lost()               the item shown is no longer ours (expired, revoked by a pause)
  constructor({api, storage, key, slug, prefetch, answered, hooks}) {
    this.api = api;
    this.storage = storage;
    this.key = key;
    this.slug = slug;
    this.prefetch = prefetch;
    this.answered = answered;
    this.hooks = hooks;
    this.held = [];          // {token, expires_at, display}; held[0] is shown
    this.leaseMs = DEFAULT_LEASE_MS;
    this.claiming = null;    // promise of the running claim
    this.claimTimer = null;
    this.heartbeatTimer = null;
    this.heartbeatDue = Infinity;
  }

  get length() { return this.held.length; }

  get current() { return this.held[0]; }

  // Fewer held than the page may hold.
  get short() { return this.held.length < this.prefetch; }

  tokens() { return this.held.map((a) => a.token); }

  save() { save(this.storage, this.key, this.held); }

  // What this tab held before a reload, less what it has answered since.
  restore() {
    const answered = this.answered();
    this.held = load(this.storage, this.key).filter((a) => !answered.has(a.token));
  }

  add(list) {
    const known = new Set(this.tokens());
    const answered = this.answered();
    (list || []).forEach((a) => {
      if (a && a.token && !known.has(a.token) && !answered.has(a.token)) {
        known.add(a.token);
        this.held.push(a);
        const ms = Date.parse(a.expires_at) - Date.now();
        if (ms > 3000) { this.leaseMs = Math.min(ms, MAX_LEASE_MS); }
        if (Date.now() + this.beatMs() < this.heartbeatDue) { this.scheduleHeartbeat(); }
      }
    });
    this.save();
  }

  // The item shown is answered: it leaves the held list (saved by the caller, once its answer
  // is safe in the outbox).
  take() { return this.held.shift(); }

  // Show `assignment` (an undone answer's item) first.
  putFirst(assignment) {
    this.held = this.held.filter((a) => a.token !== assignment.token);
    this.held.unshift(assignment);
    this.save();
  }

  // The page is going away: give back the prefetched items; keep the shown one (a reload shows
  // it again while its lease holds; if the tab is closed, the lease simply expires).
  spareTokens() { return this.tokens().slice(1); }

  keepCurrentOnly() {
    this.held = this.held.slice(0, 1);
    this.save();
  }

  // Top up to `prefetch` leases (one claim at a time).
  claim() {
    if (this.claiming) { return this.claiming; }
    if (!this.short) { return Promise.resolve(); }
    clearTimeout(this.claimTimer);
    this.claiming = this.api.post("tasks/" + this.slug + "/claim",
                                  {count: this.prefetch, holding: this.tokens()})
      .then((result) => {
        const data = result.data || {};
        if (result.status !== 200) {
          this.hooks.claimFailed(result);
          this.retryClaim();
          return false;
        }
        this.add(data.assignments);
        // Beat at once: the server hands leases never beaten to this annotator's next claim
        // (their page left before the reply came), so say now that this page holds them.
        if ((data.assignments || []).length) { this.heartbeat(); }
        this.hooks.claimed(data);
        if (!this.held.length && data.status !== "closed" && data.status !== "daily_cap") {
          this.retryClaim();
        }
        return data.status === "ok" && (data.assignments || []).length > 0;
      }, () => {
        this.hooks.claimFailed(null);
        this.retryClaim();
        return false;
      })
      .then((gotSome) => {
        this.claiming = null;
        // Answers given while the claim was out: top up again.
        if (gotSome && this.short) { this.claim(); }
      }, () => { this.claiming = null; });
    return this.claiming;
  }

  retryClaim() {
    this.claimTimer = setTimeout(() => this.claim(), RETRY_EMPTY_MS);
  }

  beatMs() { return Math.max(MIN_BEAT_MS, this.leaseMs / 3); }

  scheduleHeartbeat() {
    clearTimeout(this.heartbeatTimer);
    const delay = this.beatMs();
    this.heartbeatDue = Date.now() + delay;
    this.heartbeatTimer = setTimeout(() => this.heartbeat(), delay);
  }

  // Start the heartbeat unless it runs already.
  startHeartbeat() {
    if (!this.heartbeatTimer) { this.scheduleHeartbeat(); }
  }

  heartbeat() {
    clearTimeout(this.heartbeatTimer);
    const tokens = this.tokens();
    const next = () => this.scheduleHeartbeat();
    if (!tokens.length) { next(); return Promise.resolve(); }
    return this.api.post("assignments/heartbeat", {tokens: tokens}).then((result) => {
      if (result.status === 200 && result.data) { this.applyHeartbeat(result.data.assignments); }
      next();
    }, next);
  }

  applyHeartbeat(list) {
    const byToken = new Map((list || []).map((a) => [a.token, a]));
    const before = this.held.length ? this.held[0].token : null;
    this.held = this.held.filter((a) => {
      const beat = byToken.get(a.token);
      if (beat && beat.valid === false) { return false; }
      if (beat && beat.expires_at) { a.expires_at = beat.expires_at; }
      return true;
    });
    this.save();
    if (before && (!this.held.length || this.held[0].token !== before)) { this.hooks.lost(); }
    if (this.short) { this.claim(); }
  }

  release(tokens) {
    if (!tokens.length) { return; }
    try {
      this.api.post("assignments/release", {tokens: tokens}, {keepalive: true})
        .catch(() => { /* the lease simply expires */ });
    } catch (e) { /* page going away */ }
  }
}
