// What the worker reports: the observe snapshot, and the tab and window events (with the
// records they complete: a spawn claimed by its pending open, an opener, an attribution).
//
// Part of the service worker: background.js's createWorker builds it with createEvents and
// registers the returned listeners. It holds no state: what it completes is written to
// chrome.storage.session, what it reports goes out through the connection's sendEvent.

import { KIND_BOUND, attrKey, bornKey, isReportableTab, isReportableWindow, kindOf, normalizeUrl, openerKey, recKey, tabShape, windowShape } from "./shapes.js";

/**
 * Builds the reports. deps: chrome (tabs, windows), session (store.js over
 * chrome.storage.session), now, log, ledger (createLedger's serial, claimFromPending), actor
 * (act.js createActor's claimOpen, forgetTab), claimOwnTab (ownership.js: a tab
 * this worker made itself) and sendEvent (connection.js).
 *
 * Returns observe and the listeners onTabCreated, onTabUpdated, onTabRemoved, onWindowCreated,
 * onWindowRemoved.
 */
export function createEvents({ chrome, session, now, log, ledger, actor, claimOwnTab, sendEvent }) {

  async function observe() {
    const wins = await chrome.windows.getAll({ populate: true });
    const attributed = {};
    const openers = {};
    for (const [k, v] of Object.entries(await session.all())) {
      if (k.startsWith("attr:")) attributed[k.slice(5)] = v;
      if (k.startsWith("opener:")) openers[k.slice(7)] = v;
    }
    const windows = [];
    const tabs = [];
    for (const w of wins) {
      if (!isReportableWindow(w)) continue;
      windows.push(windowShape(w));
      for (const t of w.tabs ?? []) {
        if (!isReportableTab(t)) continue;
        const a = attributed[t.id];
        const opener = a ? undefined : Number.isInteger(openers[t.id]) ? openers[t.id] : t.openerTabId;
        tabs.push(tabShape({ ...t, openerTabId: opener }, a));
      }
    }
    return { windows, tabs };
  }

  function onTabCreated(tab) {
    const seenAt = now(); // when Chrome reported it, not when the queue gets to it
    ledger.serial(async () => {
      if (!Number.isInteger(tab?.id)) return;
      const own = claimOwnTab(tab.id); // the last-tab rule's blank tab
      let owner = (await session.get(recKey(tab.id)))?.owner;
      // A tab an acted-on page announced (Page.windowOpen): its true opener is that page,
      // whatever tab Chrome names (the window's active one); opened noopener, it is the act's.
      // The window of the tab Chrome names as its opener: an announcement of a tab in another
      // window does not answer it (claimOpen).
      let openerWindowId;
      if (!owner && !own && Number.isInteger(tab.openerTabId)) {
        openerWindowId = await chrome.tabs.get(tab.openerTabId).then((o) => o?.windowId, () => undefined);
      }
      const announced = !owner && !own ? actor.claimOpen(seenAt, normalizeUrl(tab.pendingUrl || tab.url || ""), openerWindowId) : undefined;
      let opener = tab.openerTabId;
      let attributed;
      if (announced) {
        opener = announced.noopener ? undefined : announced.sourceTabId;
        if (announced.noopener) attributed = announced.key;
        // Opened by the act's own input in a tab the session only binds: the act's (a tab the
        // user opens there themselves is announced by no act, and stays theirs).
        const source = await session.get(recKey(announced.sourceTabId));
        if (source && kindOf(source) === KIND_BOUND) attributed = announced.key;
      }
      // The opener as seen now, at creation: adopt trusts this one, since Chrome may drop
      // openerTabId from later reports of the tab.
      if (Number.isInteger(opener)) await session.set({ [openerKey(tab.id)]: opener });
      if (!isReportableTab(tab)) return;
      if (!owner) owner = await ledger.claimFromPending(tab);
      // A tab without an opener that merely appears while an act runs is no proof of the
      // act's doing: only an announcement (above) or an opener attributes.
      if (!owner && attributed) await session.set({ [attrKey(tab.id)]: attributed });
      const shape = tabShape({ ...tab, openerTabId: attributed ? undefined : opener }, owner ? undefined : attributed);
      sendEvent("tabCreated", owner ? { tab: shape, owner } : { tab: shape });
    }).catch((e) => log.warn("tabwarden: tabCreated:", e?.message));
  }

  /** A tab as reported: the opener seen at creation and the act attribution win over Chrome's later view. */
  async function reportedShape(tab) {
    const [remembered, attributed] = await Promise.all([session.get(openerKey(tab.id)), session.get(attrKey(tab.id))]);
    const opener = attributed ? undefined : Number.isInteger(remembered) ? remembered : tab.openerTabId;
    return tabShape({ ...tab, openerTabId: opener }, attributed);
  }

  function onTabUpdated(tabId, changeInfo, tab) {
    if (!("url" in changeInfo || "title" in changeInfo || "status" in changeInfo)) return;
    ledger.serial(async () => {
      if (isReportableTab(tab)) sendEvent("tabUpdated", { tab: await reportedShape(tab) });
    }).catch((e) => log.warn("tabwarden: tabUpdated:", e?.message));
  }

  function onTabRemoved(tabId, removeInfo) {
    // The record is kept on purpose: a later close/cleanup answers closed:false and drops it,
    // instead of not_owned, which would read as a refusal. Tab ids are never reused.
    ledger.serial(async () => {
      actor.forgetTab(tabId);
      await session.remove([openerKey(tabId), attrKey(tabId)]);
      sendEvent("tabRemoved", { tabId, windowId: removeInfo?.windowId });
    }).catch((e) => log.warn("tabwarden: tabRemoved:", e?.message));
  }

  function onWindowCreated(win) {
    ledger.serial(async () => {
      if (!isReportableWindow(win)) return;
      // Remember which tab a window was born with, so adopt can tell a spawned popup window
      // (closeable with its tab) from a user window (kept alive by the last-tab rule).
      const first = await chrome.tabs.query({ windowId: win.id });
      if (first.length === 1) await session.set({ [bornKey(win.id)]: { firstTabId: first[0].id } });
      sendEvent("windowCreated", { window: windowShape(win) });
    }).catch((e) => log.warn("tabwarden: windowCreated:", e?.message));
  }

  function onWindowRemoved(windowId) {
    ledger.serial(async () => {
      await session.remove(bornKey(windowId));
      sendEvent("windowRemoved", { windowId });
    }).catch((e) => log.warn("tabwarden: windowRemoved:", e?.message));
  }

  return { observe, onTabCreated, onTabUpdated, onTabRemoved, onWindowCreated, onWindowRemoved };
}
