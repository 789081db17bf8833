// Lists kept in Web Storage as JSON. Storage that is full or unreadable never breaks the page:
// a list that cannot be read is empty, one that cannot be written stays in memory.

export function load(storage, key) {
  try { return JSON.parse(storage.getItem(key) || "[]"); } catch (e) { return []; }
}

export function save(storage, key, value) {
  try { storage.setItem(key, JSON.stringify(value)); } catch (e) { /* quota: keep in memory */ }
}
