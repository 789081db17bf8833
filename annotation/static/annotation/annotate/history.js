// The answers given on this page, newest last: what `u` can take back. Kept in sessionStorage
// (the last 20), so a reload can still undo.
import { load, save } from "./storage.js";

const KEPT = 20;

export class AnswerHistory {
  constructor(storage, key) {
    this.storage = storage;
    this.key = key;
    this.entries = load(storage, key);  // {client_id, sent, undo_until?}
  }

  save() { save(this.storage, this.key, this.entries.slice(-KEPT)); }

  get canUndo() { return this.entries.length > 0; }

  get last() { return this.entries[this.entries.length - 1]; }

  add(clientId) {
    this.entries.push({client_id: clientId, sent: false});
    this.save();
  }

  // The server has it (`answer`: the stored answer, with its undo window).
  markSent(clientId, answer) {
    this.entries.forEach((h) => {
      if (h.client_id === clientId) {
        h.sent = true;
        h.undo_until = answer && answer.undo_until;
      }
    });
    this.save();
  }

  remove(clientId) {
    this.entries = this.entries.filter((h) => h.client_id !== clientId);
    this.save();
  }

  pop() {
    this.entries.pop();
    this.save();
  }

  clear() {
    this.entries = [];
    this.save();
  }
}
