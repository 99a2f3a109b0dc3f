// The worker's view of one chrome.storage area: the few reads every part needs (one key, every
// value under a prefix), and writes passed straight through. It holds no state of its own:
// what must survive the worker lives in the area itself (chrome.storage.session for the
// ledger and the connection status, see shapes.js "Storage layout").

/** Wraps a chrome.storage area (session or local). */
export function createStore(area) {
  return {
    /** The area itself (for helpers that take a chrome.storage area, e.g. monitor.js). */
    area,
    /** The value stored under key, or undefined. */
    async get(key) {
      return (await area.get(key))[key];
    },
    /** Every stored item, as {key: value}. */
    all: () => area.get(null),
    /** The values of every key starting with prefix. */
    async withPrefix(prefix) {
      const all = await area.get(null);
      return Object.entries(all)
        .filter(([k]) => k.startsWith(prefix))
        .map(([, v]) => v);
    },
    set: (items) => area.set(items),
    remove: (keys) => area.remove(keys),
  };
}
