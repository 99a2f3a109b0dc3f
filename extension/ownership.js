// Opening, adopting, binding, releasing and closing tabs for an owner, and cleanup: only
// what the owner opened or spawned is ever closed, and never the user's last tab of a window
// (the last-tab rule: an about:blank tab takes its place). Every function here runs inside
// the ownership queue (ledger.js serial).
//
// Part of the service worker: background.js's createWorker builds it with createOwnership,
// giving it the ledger's lookups. It owns the set of tabs this worker created itself outside
// open (the last-tab rule's about:blank tabs), which events.js asks about through claimOwnTab.

import { CLOSED_BY_KEY, CLOSED_KEEP, CommandError, KIND_BOUND, KIND_OPENED, KIND_SPAWNED, OWNED_KINDS, attrKey, bornKey, isReportableTab, isReportableWindow, kindOf, pendingKey, recKey, requireId, requireOpenUrl, requireOwner, requireParent } from "./shapes.js";

// A tab's close is bounded and answers the page's dialogs. chrome.tabs.remove waits for the
// page, and a page can hold it for ever: a beforeunload prompt over an unsent draft blocks its
// renderer, and a DevTools session attached after the prompt showed is told of no dialog (and
// its Page.enable never returns). So the worker attaches its debugger (the permission act.js
// uses) before the remove, with Page events on: a beforeunload prompt is accepted (leaving is
// what was asked), any other dialog dismissed (no answer on anyone's behalf). Every step is
// bounded; a tab still open after CLOSE_BOUND_MS throws `failed` (the agent retries) instead
// of stalling the ownership queue.
export const CLOSE_STEP_MS = 1000;
export const CLOSE_BOUND_MS = 5000;
const TIMED_OUT = Symbol("timed out");

/**
 * Builds the ownership operations. deps: chrome (tabs, windows, debugger), session (store.js
 * over chrome.storage.session), now, setTimer, clearTimer, and ledger (createLedger's
 * liveRecordOf, lookupTab, tryGetTab, maxTabIdSeen, openerOf), and releaseTab(tabId) (act.js: ends
 * a debugger session an act kept for the tab's dialog).
 *
 * Returns open, adopt, bind, release, closeOwned, cleanup and claimOwnTab.
 */
export function createOwnership({ chrome, session, now, setTimer, clearTimer, ledger, releaseTab = async () => {} }) {
  // Tabs this worker created itself outside open (the last-tab rule's about:blank): never
  // attributed to an act.
  const ownTabs = new Set();

  /** p's value, or TIMED_OUT after ms. */
  function within(p, ms) {
    let timer = null;
    const late = new Promise((resolve) => {
      timer = setTimer(() => resolve(TIMED_OUT), ms);
    });
    return Promise.race([p, late]).finally(() => clearTimer(timer));
  }

  /** chrome.tabs.remove, bounded, with the page's dialogs answered (see CLOSE_BOUND_MS). */
  async function removeTab(tabId) {
    const target = { tabId };
    const answer = (source, method, params) => {
      if (source?.tabId !== tabId || method !== "Page.javascriptDialogOpening") return;
      chrome.debugger
        .sendCommand(target, "Page.handleJavaScriptDialog", { accept: params?.type === "beforeunload" })
        .catch(() => {}); // the dialog or the tab went meanwhile: nothing to answer
    };
    const settled = (p) =>
      p.then(
        () => null,
        (e) => e ?? new Error("failed"),
      );
    let attached = false;
    // A session an act kept for the tab's dialog is ended first (the dialog dismissed): the
    // close attaches its own.
    await within(settled(releaseTab(tabId)), CLOSE_STEP_MS);
    chrome.debugger.onEvent.addListener(answer);
    try {
      attached = (await within(settled(chrome.debugger.attach(target, "1.3")), CLOSE_STEP_MS)) === null;
      if (attached) {
        // A renderer already blocked (a dialog it opened earlier) never answers Page.enable: the
        // remove below is still tried, bounded.
        await within(settled(chrome.debugger.sendCommand(target, "Page.enable")), CLOSE_STEP_MS);
        await within(settled(chrome.debugger.sendCommand(target, "Page.handleJavaScriptDialog", { accept: false })), CLOSE_STEP_MS); // no dialog showing: the usual case
      }
      const r = await within(settled(chrome.tabs.remove(tabId)), CLOSE_BOUND_MS);
      if (r === TIMED_OUT) {
        if (await ledger.lookupTab(tabId)) throw new Error(`the page held its close for ${Math.round(CLOSE_BOUND_MS / 1000)} s`);
      } else if (r) {
        throw r;
      }
    } finally {
      chrome.debugger.onEvent.removeListener(answer);
      if (attached) await within(settled(chrome.debugger.detach(target)), CLOSE_STEP_MS); // gone with its tab: nothing to detach
    }
  }

  async function open(args) {
    const owner = requireOwner(args);
    const url = requireOpenUrl(args.url);
    const newWindow = args.newWindow === true;
    const windowId = newWindow ? null : requireId(args.windowId, "windowId");

    // Idempotent by owner: a retried open (the host lost our reply, or the worker restarted)
    // returns the tab it already has. An owner holds one live tab at most: one it adopted or
    // bound is not "opened", and open refuses instead of creating a second.
    const live = await ledger.liveRecordOf(owner);
    if (live) {
      if (kindOf(live.rec) !== KIND_OPENED) {
        throw new CommandError("in_use", `owner ${owner} already has tab ${live.rec.tabId} (${kindOf(live.rec)})`);
      }
      return { tabId: live.tab.id, windowId: live.tab.windowId, createdWindow: !!live.rec.createdWindow };
    }

    if (!newWindow) {
      let win = null;
      try {
        win = await chrome.windows.get(windowId);
      } catch {
        /* gone */
      }
      // An incognito window is invisible to the host; treat it as absent.
      if (!win || !isReportableWindow(win)) throw new CommandError("not_found", `window ${windowId} not found`);
    }

    // The marker survives a worker restart: if this worker dies between tabs.create and the
    // record write below, the next worker's onCreated still attributes the tab to its owner.
    // maxTabId bounds what it may claim: the tab this open creates gets a larger id than every
    // tab that exists now (Chrome's ids only grow), so an older tab whose onCreated arrives
    // late can never be taken for it.
    const maxTabId = await ledger.maxTabIdSeen();
    await session.set({ [pendingKey(owner)]: { owner, url, windowId, newWindow, maxTabId, at: now() } });
    try {
      let tab;
      if (newWindow) {
        const win = await chrome.windows.create({ url, focused: false });
        tab = win.tabs?.[0] ?? (await chrome.tabs.query({ windowId: win.id }))[0];
      } else {
        tab = await chrome.tabs.create({ windowId, url, active: false });
      }
      // Record before replying: once the host has a tabId, the tab is closeable forever.
      await session.set({
        [recKey(tab.id)]: { owner, tabId: tab.id, windowId: tab.windowId, createdWindow: newWindow, kind: KIND_OPENED },
      });
      return { tabId: tab.id, windowId: tab.windowId, createdWindow: newWindow };
    } finally {
      await session.remove(pendingKey(owner));
    }
  }

  /**
   * adopt: records a spawned tab under its owner, only if this extension saw the spawn itself:
   * the tab's opener (as Chrome reported it when the tab was created) is recorded under
   * `parent`. A forged claim ("this tab of the user's was spawned by my page") finds no such
   * opener and is refused, so it can never make the user's tab closeable.
   */
  async function adopt(args) {
    const owner = requireOwner(args);
    const tabId = requireId(args.tabId, "tabId");
    const parent = requireParent(args);
    const tab = await ledger.tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) throw new CommandError("not_found", `tab ${tabId} not found`);
    const existing = await session.get(recKey(tabId));
    if (existing) {
      if (existing.owner === owner && kindOf(existing) === KIND_SPAWNED) {
        return { tabId, windowId: tab.windowId, createdWindow: !!existing.createdWindow };
      }
      throw new CommandError("in_use", `tab ${tabId} is recorded under another owner or as ${kindOf(existing)}`);
    }
    const other = await ledger.liveRecordOf(owner, tabId);
    if (other) throw new CommandError("in_use", `owner ${owner} already has tab ${other.rec.tabId}`);
    // Chrome may stop reporting openerTabId later (e.g. after the opener navigates or closes):
    // the opener seen at tabs.onCreated wins.
    // Or, for a tab without an opener, the act it appeared during is parent's (attr:<tabId>).
    const attributed = await session.get(attrKey(tabId));
    const opener = attributed ? undefined : await ledger.openerOf(tab);
    // An opener closed since (its owner's session ended as it spawned this tab) still names
    // its owner: the record of that close is this extension's own.
    const openerRec = Number.isInteger(opener)
      ? ((await session.get(recKey(opener))) ?? (await closedOwner(opener)))
      : undefined;
    // A tab opened from a tab the session only binds is the user's (their own click there)
    // unless the session's act caused it (attr:<tabId>, checked above as an opener-less tab).
    if (openerRec && kindOf(openerRec) === KIND_BOUND) {
      throw new CommandError(
        "not_observed",
        `tab ${tabId} was opened from tab ${opener}, which ${openerRec.owner} only binds, and no action of its session caused it (the user's own click there): it stays the user's`,
      );
    }
    if (Number.isInteger(opener) ? !openerRec || openerRec.owner !== parent : attributed !== parent) {
      throw new CommandError(
        "not_observed",
        Number.isInteger(opener)
          ? `tab ${tabId} was opened by tab ${opener}, which is not recorded under ${parent}`
          : `tab ${tabId} has no opener and did not appear during an action of ${parent}; it was not spawned by ${parent}`,
      );
    }
    // A spawn that came with its own window (a compose popup, a window.open with features)
    // may take that window with it on cleanup. Otherwise the last-tab rule applies: we never
    // guess that a window the user might be using belongs to the agent.
    const born = await session.get(bornKey(tab.windowId));
    const siblings = await chrome.tabs.query({ windowId: tab.windowId });
    const createdWindow = born?.firstTabId === tab.id && siblings.length === 1;
    await session.set({
      [recKey(tabId)]: { owner, tabId, windowId: tab.windowId, createdWindow, kind: KIND_SPAWNED, parent },
    });
    return { tabId, windowId: tab.windowId, createdWindow };
  }

  /** bind: records an existing tab for use under owner. A bound tab is never closed. */
  async function bind(args) {
    const owner = requireOwner(args);
    const tabId = requireId(args.tabId, "tabId");
    const tab = await ledger.tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) throw new CommandError("not_found", `tab ${tabId} not found`);
    const existing = await session.get(recKey(tabId));
    if (existing) {
      if (existing.owner === owner && kindOf(existing) === KIND_BOUND) return { tabId, windowId: tab.windowId };
      throw new CommandError("in_use", `tab ${tabId} is recorded under another owner or as ${kindOf(existing)}`);
    }
    // A spawn of a recorded page belongs to that session's adoption. Between its creation and
    // the adopt, it is unrecorded: another namespace must not bind it in that window.
    const attributed = await session.get(attrKey(tabId));
    const opener = attributed ? undefined : await ledger.openerOf(tab);
    const openerRec = Number.isInteger(opener) ? await session.get(recKey(opener)) : undefined;
    // A tab the user opened from a bound tab is theirs, and bindable.
    if (openerRec && kindOf(openerRec) !== KIND_BOUND) {
      throw new CommandError(
        "in_use",
        `tab ${tabId} was spawned by tab ${opener} of session ${openerRec.owner}'s page; it belongs to that session's adoption`,
      );
    }
    if (attributed) {
      throw new CommandError("in_use", `tab ${tabId} appeared during action ${attributed}, whose session adopts it`);
    }
    const other = await ledger.liveRecordOf(owner, tabId);
    if (other) throw new CommandError("in_use", `owner ${owner} already has tab ${other.rec.tabId}`);
    await session.set({ [recKey(tabId)]: { owner, tabId, windowId: tab.windowId, createdWindow: false, kind: KIND_BOUND } });
    return { tabId, windowId: tab.windowId };
  }

  /** release: drops owner's record of the tab and leaves the tab open. Idempotent. */
  async function release(args) {
    const owner = requireOwner(args);
    const tabId = requireId(args.tabId, "tabId");
    const rec = await session.get(recKey(tabId));
    if (!rec || rec.owner !== owner) return { released: false }; // another owner's record stays
    await session.remove(recKey(tabId));
    return { released: true };
  }

  /**
   * Closes one recorded tab, keeping its window alive unless the window was created for this
   * owner. Must run inside the queue. Returns whether a tab was removed; the record is dropped
   * only when the tab is gone. A tab that is still open after a failed remove (Chrome refuses
   * while the user drags a tab) keeps its record and throws `failed`: the agent retries.
   */
  async function closeRecorded(rec) {
    const tab = await ledger.lookupTab(rec.tabId);
    if (!tab) {
      await session.remove(recKey(rec.tabId)); // already gone (the user closed it): harmless
      return false;
    }
    // The tab may have been dragged into another window since it was recorded; only the
    // window we created for this owner, and only while the tab is still in it, may go.
    const ownsWindow = !!rec.createdWindow && tab.windowId === rec.windowId;
    if (!ownsWindow) {
      const siblings = await chrome.tabs.query({ windowId: tab.windowId });
      if (siblings.length <= 1) {
        // Removing the last tab would close the user's window (and maybe the browser).
        const blank = await chrome.tabs.create({ windowId: tab.windowId, url: "about:blank", active: false });
        if (Number.isInteger(blank?.id)) ownTabs.add(blank.id);
      }
    }
    let closed = true;
    try {
      await removeTab(rec.tabId);
    } catch (e) {
      // Gone between get and remove, or refused ("Tabs cannot be edited right now (user may
      // be dragging a tab)"): only a second look tells. A tab still open stays recorded.
      if (await ledger.lookupTab(rec.tabId)) {
        throw new CommandError("failed", `tab ${rec.tabId} could not be closed (${e?.message ?? e}); it is still open and still recorded, retry`);
      }
      closed = false;
    }
    await session.remove(recKey(rec.tabId));
    if (OWNED_KINDS.has(kindOf(rec))) await rememberClosed(rec);
    return closed;
  }

  /** Remembers who closed an owned tab, for the tabs it spawned as it closed (adopt). */
  async function rememberClosed(rec) {
    const list = ((await session.get(CLOSED_BY_KEY)) ?? []).filter(([id]) => id !== rec.tabId);
    list.push([rec.tabId, rec.owner]);
    await session.set({ [CLOSED_BY_KEY]: list.slice(-CLOSED_KEEP) });
  }

  /** The record-shaped owner of a tab closed lately, or undefined. */
  async function closedOwner(tabId) {
    const hit = ((await session.get(CLOSED_BY_KEY)) ?? []).find(([id]) => id === tabId);
    return hit ? { owner: hit[1], tabId } : undefined;
  }

  async function closeOwned(owner, tabId) {
    const rec = await session.get(recKey(tabId));
    // Idempotent: a close retried after it succeeded (the host acted on a stale view, or lost
    // our reply) finds neither the record (dropped by the first close) nor the tab. Nothing can
    // be closed and nothing is refused; tab ids are never reused, so the id cannot name a tab
    // that belongs to someone else.
    if (!rec && !(await ledger.tryGetTab(tabId))) return { closed: false };
    if (!rec || rec.owner !== owner) {
      throw new CommandError("not_owned", `tab ${tabId} is not recorded under owner ${owner}; nothing was closed`);
    }
    if (!OWNED_KINDS.has(kindOf(rec))) {
      throw new CommandError("not_owned", `tab ${tabId} is bound to ${owner}: used, never closed; release it instead`);
    }
    return { closed: await closeRecorded(rec) };
  }

  async function cleanup(owner) {
    // Bound tabs are never closed; their records stay until release.
    const mine = (await session.withPrefix("rec:"))
      .filter((r) => r.owner === owner && OWNED_KINDS.has(kindOf(r)))
      .sort((a, b) => a.tabId - b.tabId);
    const closed = [];
    const kept = [];
    let why = "";
    // One tab that cannot be closed right now does not keep the others open; the cleanup
    // still fails (the agent retries), and the kept tab's record stays for that retry.
    for (const rec of mine) {
      try {
        if (await closeRecorded(rec)) closed.push(rec.tabId);
      } catch (e) {
        kept.push(rec.tabId);
        why ||= String(e?.message ?? e);
      }
    }
    await session.remove(pendingKey(owner));
    if (kept.length) {
      throw new CommandError(
        "failed",
        `cleanup of ${owner} closed [${closed.join(",")}] but tabs [${kept.join(",")}] are still open and recorded (${why}); retry`,
      );
    }
    return { closed };
  }

  /**
   * Whether this worker created tabId itself outside open (the last-tab rule's blank tab);
   * answers once, for the tab's tabs.onCreated.
   */
  function claimOwnTab(tabId) {
    return ownTabs.delete(tabId);
  }

  return { open, adopt, bind, release, closeOwned, cleanup, claimOwnTab };
}
