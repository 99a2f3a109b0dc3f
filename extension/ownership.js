// Opening, adopting, binding, releasing and closing tabs for an owner, and cleanup: only
// what the owner opened or spawned is ever closed, and never the user's last tab of a window
// (the last-tab rule: an about:blank tab takes its place). Every function here runs inside
// the ownership queue (ledger.js serial), except close and cleanup, which queue their own
// decisions and run the tabs' removes concurrently, outside it (see "closing" below).
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
// of hanging the close (the remove runs outside the ownership queue).
//
// Page.enable and the probe for a dialog already showing are sent, not awaited, before the
// remove. Chrome dispatches the worker's extension calls in the order it makes them, and both
// commands are handled in the browser process as they arrive (that is where dialogs are told
// and answered), so Page events are on before the remove raises any prompt. Their replies
// wait for the tab's renderer, which serves the tabs of one site one at a time and is going
// away: awaiting them made a close of 10 tabs take 1.0-1.3 s against 0.27-0.36 s
// (bench/results/2026-12-07-extension-close.md).
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
        // Sent in this order, before the remove, and not awaited (see CLOSE_BOUND_MS): a
        // renderer already blocked (a dialog it opened earlier) never answers Page.enable, and
        // the tab's end (or the detach below) answers both for one that is not.
        void settled(chrome.debugger.sendCommand(target, "Page.enable"));
        void settled(chrome.debugger.sendCommand(target, "Page.handleJavaScriptDialog", { accept: false })); // no dialog showing: the usual case
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

  // ---- closing: decided in the queue, removed concurrently ----------------------------------
  //
  // A close is decided inside the ownership queue and carried out outside it. The decision
  // (is the tab recorded under the owner as opened or spawned, is it still open, would its
  // window be left without a tab) reads the records and the browser and, where the window
  // would be left with none, opens the about:blank placeholder, all in one queued task; the
  // chrome.tabs.remove calls then run concurrently, out of the queue; their results (the
  // records dropped, the closes remembered for adopt) are written back in another queued task.
  // A tab whose close is in flight counts as gone for every later decision, so of two batches
  // closing the last tabs of a window the later one opens the placeholder; its record stays
  // until the result is written, so adopt still finds the owner of a spawn it made as it closed.
  // Close requests that arrive while a decision is queued are decided together: a session's
  // pages, sent as one close per page, are decided in one or two tasks, not one each.

  // Closes in flight: tabId -> { windowId, ownsWindow, done } (done: the close's result).
  // Process handles only: a worker that dies takes its removes with it, and the next one
  // finds the records of tabs still open and closes them again.
  const inFlight = new Map();

  /**
   * A queue of items handled in batches inside the ownership queue: items queued before the
   * batch's task runs are handled by it. run(items) settles each item (resolve/reject).
   */
  function batcher(run) {
    let waiting = [];
    return (item) =>
      new Promise((resolve, reject) => {
        waiting.push({ ...item, resolve, reject });
        if (waiting.length > 1) return;
        ledger
          .serial(() => {
            const batch = waiting;
            waiting = [];
            return run(batch).catch((e) => {
              for (const it of batch) it.reject(e);
            });
          })
          .catch(() => {});
      });
  }

  /**
   * Decides the closes of items ({owner, tabId}) as one batch. Must run inside the queue.
   * Returns one promise per item, of {closed} or a CommandError: not_owned for a live tab not
   * recorded under the owner as opened or spawned, failed for a tab that could not be closed
   * (its record is kept: the agent retries). The removes it starts run outside the queue.
   */
  async function decideCloses(items) {
    const stored = await session.all();
    const out = [];
    const byTab = new Map(); // tabId -> the promise of its close decided in this batch
    const accepted = []; // {rec, tab, result: {resolve, reject}}
    const gone = [];
    await Promise.all(
      items.map(async ({ owner, tabId }, i) => {
        let result = null;
        try {
          const rec = stored[recKey(tabId)];
          // Idempotent: a close retried after it succeeded finds neither the record nor the
          // tab. Tab ids are never reused, so the id cannot name someone else's tab.
          if (!rec && !inFlight.has(tabId) && !(await ledger.tryGetTab(tabId))) {
            out[i] = Promise.resolve({ closed: false });
            return;
          }
          if (!rec || rec.owner !== owner) {
            throw new CommandError("not_owned", `tab ${tabId} is not recorded under owner ${owner}; nothing was closed`);
          }
          if (!OWNED_KINDS.has(kindOf(rec))) {
            throw new CommandError("not_owned", `tab ${tabId} is bound to ${owner}: used, never closed; release it instead`);
          }
          const flying = inFlight.get(tabId);
          if (flying) {
            out[i] = flying.done; // the same close, asked again
            return;
          }
          if (byTab.has(tabId)) {
            out[i] = byTab.get(tabId);
            return;
          }
          const p = new Promise((resolve, reject) => (result = { resolve, reject }));
          p.catch(() => {}); // answered to its own caller (below)
          byTab.set(tabId, p);
          out[i] = p;
          const tab = await ledger.lookupTab(tabId);
          if (!tab) {
            gone.push(rec); // already gone (the user closed it): harmless
            result.resolve({ closed: false });
            return;
          }
          accepted.push({ rec, tab, result });
        } catch (e) {
          if (result) result.reject(e); // and whoever joined it in this batch
          else {
            out[i] = Promise.reject(e);
            out[i].catch(() => {}); // answered to its own caller
          }
        }
      }),
    );
    if (gone.length) await session.remove(gone.map((r) => recKey(r.tabId)));

    // The last-tab rule, per window: the tabs leaving it are this batch's and those in flight.
    // A window left with none keeps a blank tab, unless a tab leaving it was opened with the
    // window for its owner (and is still in it): then the window was tabwarden's, and goes.
    const leaving = new Set([...inFlight.keys(), ...accepted.map((a) => a.rec.tabId)]);
    const byWindow = new Map();
    for (const a of accepted) {
      if (!byWindow.has(a.tab.windowId)) byWindow.set(a.tab.windowId, []);
      byWindow.get(a.tab.windowId).push(a);
    }
    const go = [];
    await Promise.all(
      [...byWindow].map(async ([windowId, closing]) => {
        try {
          const siblings = await chrome.tabs.query({ windowId });
          const stays = siblings.some((t) => !leaving.has(t.id));
          const owned =
            closing.some((a) => a.rec.createdWindow && a.rec.windowId === windowId) ||
            [...inFlight.values()].some((f) => f.windowId === windowId && f.ownsWindow);
          if (!stays && !owned) {
            // Removing the last tabs would close the user's window (and maybe the browser).
            const blank = await chrome.tabs.create({ windowId, url: "about:blank", active: false });
            if (Number.isInteger(blank?.id)) ownTabs.add(blank.id);
          }
          go.push(...closing);
        } catch (e) {
          for (const a of closing) {
            a.result.reject(new CommandError("failed", `tab ${a.rec.tabId} could not be closed (${e?.message ?? e}); it is still open and still recorded, retry`));
          }
        }
      }),
    );

    // Out of the queue: every remove at once.
    for (const a of go) {
      const { rec, tab, result } = a;
      const done = new Promise((resolve, reject) => {
        removeTab(rec.tabId).then(
          () => finishClose({ rec, error: null }).then(resolve, reject),
          (error) => finishClose({ rec, error: error ?? new Error("failed") }).then(resolve, reject),
        );
      });
      done.then(result.resolve, result.reject);
      done.catch(() => {});
      inFlight.set(rec.tabId, { windowId: tab.windowId, ownsWindow: !!rec.createdWindow && tab.windowId === rec.windowId, done });
    }
    return out;
  }

  /**
   * Writes the results of finished removes, in batches inside the queue: the record goes
   * only when the tab is gone. A tab that is still open after a failed remove (Chrome refuses
   * while the user drags a tab) keeps its record and rejects `failed`: the agent retries.
   */
  const finishClose = batcher(async (batch) => {
    const dropped = [];
    const answers = [];
    for (const it of batch) {
      const { rec, error } = it;
      try {
        // Gone between get and remove, or refused ("Tabs cannot be edited right now (user
        // may be dragging a tab)"): only a second look tells. A tab still open stays recorded.
        if (error && (await ledger.lookupTab(rec.tabId))) {
          throw new CommandError("failed", `tab ${rec.tabId} could not be closed (${error?.message ?? error}); it is still open and still recorded, retry`);
        }
        dropped.push(rec);
        answers.push(() => it.resolve({ closed: !error }));
      } catch (e) {
        answers.push(() => it.reject(e));
      } finally {
        inFlight.delete(rec.tabId);
      }
    }
    try {
      if (dropped.length) {
        await session.remove(dropped.map((r) => recKey(r.tabId)));
        await rememberClosed(dropped.filter((r) => OWNED_KINDS.has(kindOf(r))));
      }
    } catch (e) {
      for (const it of batch) it.reject(e);
      return;
    }
    for (const answer of answers) answer();
  });

  /** Remembers who closed owned tabs, for the tabs they spawned as they closed (adopt). */
  async function rememberClosed(recs) {
    if (!recs.length) return;
    const ids = new Set(recs.map((r) => r.tabId));
    const list = ((await session.get(CLOSED_BY_KEY)) ?? []).filter(([id]) => !ids.has(id));
    for (const r of recs) list.push([r.tabId, r.owner]);
    await session.set({ [CLOSED_BY_KEY]: list.slice(-CLOSED_KEEP) });
  }

  /** The record-shaped owner of a tab closed lately, or undefined. */
  async function closedOwner(tabId) {
    const hit = ((await session.get(CLOSED_BY_KEY)) ?? []).find(([id]) => id === tabId);
    return hit ? { owner: hit[1], tabId } : undefined;
  }

  /**
   * close: closes one tab recorded under owner. Requests that arrive together (the agent
   * closing an ended session's pages, one request per page) are decided as one batch.
   * Call outside the queue: it queues its own decision.
   */
  const decideBatch = batcher(async (batch) => {
    const results = await decideCloses(batch);
    batch.forEach((it, i) => results[i].then(it.resolve, it.reject));
  });
  function closeOwned(owner, tabId) {
    return decideBatch({ owner, tabId });
  }

  /**
   * cleanup: closes every tab recorded under owner as opened or spawned (bound tabs are never
   * closed; their records stay until release), all at once. Call outside the queue.
   */
  async function cleanup(owner) {
    const results = await ledger.serial(async () => {
      const mine = (await session.withPrefix("rec:"))
        .filter((r) => r.owner === owner && OWNED_KINDS.has(kindOf(r)))
        .sort((a, b) => a.tabId - b.tabId);
      const ps = await decideCloses(mine.map((r) => ({ owner, tabId: r.tabId })));
      await session.remove(pendingKey(owner));
      return { mine, ps };
    });
    const closed = [];
    const kept = [];
    let why = "";
    // One tab that cannot be closed right now does not keep the others open; the cleanup
    // still fails (the agent retries), and the kept tab's record stays for that retry.
    const settled = await Promise.allSettled(results.ps);
    settled.forEach((s, i) => {
      const tabId = results.mine[i].tabId;
      if (s.status === "fulfilled") {
        if (s.value.closed) closed.push(tabId);
      } else {
        kept.push(tabId);
        why ||= String(s.reason?.message ?? s.reason);
      }
    });
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
