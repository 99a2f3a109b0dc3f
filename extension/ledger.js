// The ownership ledger: the one queue every ownership-changing operation runs in, and the
// records in chrome.storage.session (rec:, pending:, born:, opener:, attr:) with the lookups
// that read them.
//
// Part of the service worker: background.js's createWorker builds it with createLedger and
// hands the returned functions to the parts that read records. The ledger owns the queue's
// tail (a process handle: it dies with the worker, and nothing queued survives it anyway) and
// nothing else; the records themselves live in chrome.storage.session.

import { syncGroups } from "./monitor.js";
import { CommandError, KIND_OPENED, PENDING_TTL_MS, isReportableTab, normalizeUrl, openerKey, pendingKey, recKey, recordShape, sanitizeSessions } from "./shapes.js";

/**
 * Builds the ledger. deps: chrome (tabs), session (store.js over chrome.storage.session), now,
 * log. Returns serial, idle, mayAct, tryGetTab, lookupTab, maxTabIdSeen, openerOf,
 * liveRecordOf, records, storeSessions, claimFromPending.
 */
export function createLedger({ chrome, session, now, log }) {
  let queue = Promise.resolve(); // tail of the ownership queue

  // ---- the ownership queue -------------------------------------------------------------------

  /**
   * Runs task after every previously queued task has settled. open, adopt, close, cleanup and
   * the tab/window event handlers all go through here, which gives three guarantees:
   *  - the last-tab check and the removal it protects are atomic with respect to other cleanups
   *    (two owners closing the final two tabs of a window cannot both skip the blank tab);
   *  - an onCreated fired while tabs.create is still pending is handled after open has
   *    written its record, so the tabCreated event already knows the owner;
   *  - cleanup waits for an in-flight open of the same owner instead of missing its tab.
   * A failed task rejects its own caller only; the chain continues.
   */
  function serial(task) {
    const run = queue.then(task);
    queue = run.catch(() => {});
    return run;
  }

  /** Resolves once everything queued so far has run. */
  function idle() {
    return queue;
  }

  // ---- lookups ---------------------------------------------------------------------------------

  /** act's ownership check: the tab is recorded under owner (opened, spawned or bound). */
  async function mayAct(owner, tabId) {
    const rec = await session.get(recKey(tabId));
    const tab = await tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) {
      throw new CommandError(rec?.owner === owner ? "not_found" : "not_owned", `tab ${tabId} not found${rec?.owner === owner ? "" : ` under owner ${owner}`}`);
    }
    if (!rec || rec.owner !== owner) {
      throw new CommandError("not_owned", `tab ${tabId} is not recorded under owner ${owner}; tabwarden acts only on tabs it opened, saw spawned, or was bound to`);
    }
    return tab;
  }

  async function tryGetTab(tabId) {
    try {
      return await chrome.tabs.get(tabId);
    } catch {
      return null; // "No tab with id"
    }
  }

  /**
   * Like tryGetTab, but only Chrome's "No tab with id" counts as gone; any other failure of
   * the lookup is thrown. Used where "gone" drops a record: a record dropped for a tab that
   * still exists would leave an agent page open that looks like the user's own.
   */
  async function lookupTab(tabId) {
    try {
      return await chrome.tabs.get(tabId);
    } catch (e) {
      if (/no tab with id/i.test(String(e?.message ?? e))) return null;
      throw new CommandError("failed", `looking up tab ${tabId} failed (${e?.message ?? e}); its record is kept, retry`);
    }
  }

  /** The largest tab id the browser has handed out so far (ids only grow). */
  async function maxTabIdSeen() {
    let max = 0;
    for (const t of await chrome.tabs.query({})) if (Number.isInteger(t?.id) && t.id > max) max = t.id;
    return max;
  }

  /** The tab's opener as Chrome reported it at tabs.onCreated, else its current openerTabId. */
  async function openerOf(tab) {
    const remembered = await session.get(openerKey(tab.id));
    return Number.isInteger(remembered) ? remembered : tab.openerTabId;
  }

  /** The owner's record whose tab is still open (an owner holds one live tab at most). */
  async function liveRecordOf(owner, exceptTabId) {
    const mine = (await session.withPrefix("rec:")).filter((r) => r.owner === owner && r.tabId !== exceptTabId).sort((a, b) => a.tabId - b.tabId);
    for (const rec of mine) {
      const tab = await tryGetTab(rec.tabId);
      if (tab) return { rec, tab };
    }
    return null;
  }

  async function records() {
    const recs = (await session.withPrefix("rec:")).sort((a, b) => a.tabId - b.tabId);
    return { records: recs.map(recordShape) };
  }

  async function storeSessions(args) {
    const sessions = sanitizeSessions(args?.sessions);
    await session.set({ sessions, sessionsAt: now() });
    // Tab groups follow in the ownership queue (they read the records); a failure there never
    // fails the command: the popup already shows the sessions, the next publish regroups.
    serial(async () => syncGroups(chrome, session.area, sessions, await session.withPrefix("rec:"), log)).catch((e) =>
      log.warn("tabwarden: tab groups:", e?.message),
    );
    return {};
  }

  // ---- browser events --------------------------------------------------------------------------

  // A tab the host did not create may still be the child of an interrupted open: the marker
  // written before tabs.create names the owner. Only an unambiguous, fresh match claims it, and
  // only a tab that open could have created: no opener (open never sets one; a tab with an
  // opener is a page's spawn, the user's or another session's) and an id above every tab that
  // existed when the marker was stored (a marker without that bound claims nothing).
  async function claimFromPending(tab) {
    if (Number.isInteger(tab.openerTabId) || !Number.isInteger(tab.id)) return undefined;
    const url = normalizeUrl(tab.pendingUrl || tab.url || "");
    const t = now();
    const matches = (await session.withPrefix("pending:")).filter(
      (m) =>
        t - m.at < PENDING_TTL_MS &&
        Number.isInteger(m.maxTabId) &&
        tab.id > m.maxTabId &&
        m.url === url &&
        (m.newWindow || m.windowId === tab.windowId),
    );
    if (matches.length !== 1) return undefined;
    const m = matches[0];
    await session.set({
      [recKey(tab.id)]: { owner: m.owner, tabId: tab.id, windowId: tab.windowId, createdWindow: !!m.newWindow, kind: KIND_OPENED },
    });
    await session.remove(pendingKey(m.owner));
    return m.owner;
  }

  return { serial, idle, mayAct, tryGetTab, lookupTab, maxTabIdSeen, openerOf, liveRecordOf, records, storeSessions, claimFromPending };
}
