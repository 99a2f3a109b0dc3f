// tabwarden's `act` command: one curated step on a tab the host's owner has recorded.
//
// The host sends a step (observe, navigate, click, type, press, scroll, wait, back, forward,
// reload, hover, select, fill, screenshot, upload), never a method
// name or an expression. The worker runs it with the `debugger` permission, the only way an
// extension can produce trusted input (chrome.scripting's synthetic events are untrusted and
// need host permissions, which tabwarden does not ask for):
//
//   chrome.debugger.attach({tabId}, "1.3")
//   Page.getFrameTree + Page.createIsolatedWorld(worldName "tabwarden") on the main frame
//   Runtime.evaluate of exactly `(${pageSource})(op, args)` in that world, where pageSource is
//     the extension's own page.js (fetched once from the extension package) and op/args are
//     JSON literals built here from the validated step
//   Input.dispatchMouseEvent / Input.insertText / Input.dispatchKeyEvent for input
//   chrome.debugger.detach, always, also after an error
//
// navigate uses chrome.tabs.update(tabId, {url}) and nothing else (never `active`); reload
// chrome.tabs.reload; back and forward Page.navigateToHistoryEntry (see history). Nothing
// here focuses a window or activates a tab. Acts on one tab run one at a time.
//
// Attribution: a tab the acted-on page opened during the act (Page.windowOpen, see claimOpen)
// is reported with the acted-on tab as its opener, or, opened noopener, attributed to the
// act's key (stored as attr:<tabId>, which `adopt` with that key as parent accepts). Only the
// page's announcement is proof: a tab without an opener that merely appears in the acted-on
// tab's window while an act runs is the user's (until 2026-12-07 it was attributed to the act
// for the act and ATTRIBUTION_GRACE_MS after, and the session's end closed a tab the user
// opened meanwhile).
//
// The step's validation, targeting, keys and result shapes live in step.js. This file holds
// the actor's parts, each a small factory or function:
// createPageSource (page.js, loaded once), createDebuggerWatch (windowOpen announcements and dialogs while an act runs),
// createDebuggerSessions (attach, bound, detach), createPageWorlds (the tabwarden world and
// page(op, args)), the verbs (click, hover, typeText, press, waitText, navigate, history), and createActor,
// which wires them and runs one act per tab at a time. page.js is the page's side only:
// reading the DOM and resolving targets there, with the guards of its own state (the world
// nonce, document ids, epochs) and of its input, which the cdp driver relies on too.


import { ActRefusal, invalid, clip, text, target, element, observation, pageRefusal, OUTLINE_BYTES } from "./step.js";
import { createFrames, FrameCheck, framePolicy } from "./frames.js";

// What the worker and the tests import from here, as before the split.
export { ActRefusal, validateStep, parseKey } from "./step.js";

export const ATTRIBUTION_GRACE_MS = 1000;
// Steps after which a late tab may still be the act's doing (a noopener link's tab is reported
// late); after observe, scroll and wait the window closes with the step.
const MUTATING = new Set(["navigate", "click", "type", "press", "back", "forward", "reload", "select", "fill", "upload"]);
// Mutating steps run whole on one debugger session, whose Page.windowOpen announcements the
// act's result counts (`spawns`); navigate and the history moves (whose loads run outside
// one) have no `spawns` (the agent cannot tell), nor do the steps that change nothing, nor
// fill (its fields may be typed through more than one call).
const WATCHED = new Set(["click", "select", "type", "press", "dialog", "upload"]);
export const NAVIGATE_TIMEOUT_MS = 30_000;
const WAIT_POLL_MS = 200;
// A step whose page stops answering (a JavaScript dialog the page opened between steps, a
// script keeping the page busy) is abandoned after this long (plus a wait's own timeout): the
// debugger detaches and the tab's next act can run.
export const STEP_BOUND_MS = 25_000;
// A JavaScript dialog a step left open waits this long for a dialog step, then is dismissed
// (browser.DialogTimeout).
export const DIALOG_TIMEOUT_MS = 5 * 60_000;
export const WORLD_NAME = "tabwarden";

// ---- the page script -------------------------------------------------------------------------

/**
 * The bundled page.js, loaded once through load() (the extension's own file, never anything
 * from the host) and checked to be one function expression. Returns source() → string.
 */
function createPageSource(load) {
  let pageSource = null; // loaded once
  return async function source() {
    if (pageSource === null) {
      // One expression whose value is the page function (after its header comment).
      const raw = await load();
      const s = typeof raw === "string" ? raw.trim().replace(/;$/, "") : "";
      if (!s.includes("function tabwardenPage(op, args)") || !/[})]$/.test(s)) throw new Error("page.js is missing or is not one function expression");
      pageSource = s;
    }
    return pageSource;
  };
}

// ---- what the debugger reports while an act runs -----------------------------------------------
//
// chrome.tabs reports a new tab's openerTabId as the tab strip sees it: the ACTIVE tab of
// the window when the new tab was inserted, not the page that opened it. An act drives a
// background tab, so a window.open from it would be reported as opened by the user's active
// tab. The debugger session tells the truth: Page.windowOpen fires on the acted-on tab just
// before Chrome creates the tab, with the features (noopener) it was opened with. Each such
// announcement claims the next tab created (events.js asks claimOpen at tabs.onCreated).

/**
 * The acts running on this worker's debugger sessions, the tabs their pages announced, and
 * the dialogs answered while they ran. deps: chrome (debugger), now, log. Returns
 * onDebuggerEvent, claimOpen, and for the actor: startAct, stopAct, noteDialog, dialogsSeen,
 * announcedSeen.
 */
function createDebuggerWatch({ chrome, now, log }) {
  const acting = new Map(); // tabId -> key of the act running on it (this worker's debugger sessions)
  const actWindows = new Map(); // tabId -> the window it was in when its act started
  const opens = []; // {key, sourceTabId, noopener, at}: announced, not yet claimed
  const dialogs = new Map(); // tabId -> dialogs dismissed while its act ran
  const announced = new Map(); // tabId -> Page.windowOpen events while its act ran (the act's `spawns`)
  const held = new Set(); // tabs whose debugger session is kept while a dialog shows (createDebuggerSessions)
  const shown = new Map(); // tabId -> the JavaScript dialog it shows, left for a dialog step
  const waiters = new Map(); // tabId -> called when a dialog opens while its act runs

  /** Records a dialog answered on tabId while its act ran; the step fails naming it. */
  function noteDialog(tabId, what) {
    if (!dialogs.has(tabId)) dialogs.set(tabId, []);
    dialogs.get(tabId).push(what);
  }

  /**
   * chrome.debugger.onEvent listener (registered at top level by background.js). A JavaScript
   * dialog blocks the page and every later call until answered: one that opens while an act
   * runs (or is open when the act attaches) is answered at once, beforeunload accepted (the
   * step is leaving the page), alert, confirm and prompt dismissed (no answer on anyone's
   * behalf), and the step fails naming it.
   */
  function onDebuggerEvent(source, method, params) {
    const tabId = source?.tabId;
    if (!acting.has(tabId) && !held.has(tabId)) return;
    if (method === "Page.javascriptDialogOpening") {
      const type = String(params?.type ?? "dialog");
      if (type === "alert" || type === "confirm" || type === "prompt") {
        // Left open for a dialog step: the running act returns it (waiters), the session stays.
        const d = { type, message: clip(String(params?.message ?? ""), 1024) };
        if (type === "prompt") d.defaultPrompt = clip(String(params?.defaultPrompt ?? ""), 1024);
        shown.set(tabId, d);
        waiters.get(tabId)?.(d);
        return;
      }
      noteDialog(tabId, `${clip(type, 16)} ${JSON.stringify(clip(String(params?.message ?? ""), 200))}`);
      chrome.debugger
        .sendCommand({ tabId }, "Page.handleJavaScriptDialog", { accept: type === "beforeunload" })
        .catch((e) => log.warn?.(`tabwarden: answering a dialog on tab ${tabId}:`, e?.message));
      return;
    }
    if (method === "Page.javascriptDialogClosed") {
      shown.delete(tabId); // answered (by a dialog step, the timeout or the user)
      return;
    }
    if (method !== "Page.windowOpen") return;
    const features = Array.isArray(params?.windowFeatures) ? params.windowFeatures : [];
    let url = typeof params?.url === "string" ? params.url : "";
    try {
      url = new URL(url).href;
    } catch {
      /* keep as given */
    }
    announced.set(tabId, (announced.get(tabId) ?? 0) + 1);
    opens.push({ key: acting.get(tabId), sourceTabId: tabId, sourceWindowId: actWindows.get(tabId), url, noopener: features.includes("noopener") || features.includes("noreferrer"), at: now() });
    if (opens.length > 32) opens.shift();
  }

  /**
   * The act announcement a tab created at time t with url answers, consumed; undefined if
   * none. A window.open tab is created with no url yet; a tab with another url is not the
   * announced one (a popup the blocker stopped leaves an announcement nobody answers).
   * openerWindowId is the window of the tab Chrome names as the new tab's opener (the active
   * tab of the window the opening page is in), when it names one: a tab whose named opener is
   * in another window than the announcing tab was opened from elsewhere (the user's own
   * window.open in their own window, answering nothing: a blocked popup's announcement must
   * not hand it to the session).
   */
  function claimOpen(t, url, openerWindowId) {
    while (opens.length && t - opens[0].at > ATTRIBUTION_GRACE_MS) opens.shift();
    if (!opens.length) return undefined;
    if (url && url !== "about:blank" && url !== opens[0].url) return undefined;
    const o = opens[0];
    if (Number.isInteger(openerWindowId) && Number.isInteger(o.sourceWindowId) && openerWindowId !== o.sourceWindowId) return undefined;
    return opens.shift();
  }

  return {
    onDebuggerEvent,
    claimOpen,
    noteDialog,
    /** key's act starts on tabId: its events are watched from now, with no dialog seen yet. */
    startAct(tabId, key, windowId) {
      acting.set(tabId, key);
      if (Number.isInteger(windowId)) actWindows.set(tabId, windowId);
      else actWindows.delete(tabId);
      dialogs.delete(tabId);
      announced.delete(tabId);
    },
    /** How many new pages tabId announced (Page.windowOpen) since its act started. */
    announcedSeen: (tabId) => announced.get(tabId) ?? 0,
    /** The dialogs answered on tabId since its act started. */
    dialogsSeen: (tabId) => dialogs.get(tabId),
    /** The dialog tabId shows, left for a dialog step; undefined if none. */
    shownDialog: (tabId) => shown.get(tabId),
    /** The dialog of tabId was answered (or its tab's session ended). */
    forgetDialog: (tabId) => shown.delete(tabId),
    /** Calls f(dialog) when tabId opens a dialog, until the returned function is called. */
    onDialog(tabId, f) {
      waiters.set(tabId, f);
      return () => {
        if (waiters.get(tabId) === f) waiters.delete(tabId);
      };
    },
    /** tabId's session is kept (held) while its dialog shows, or not. */
    hold: (tabId, on) => (on ? held.add(tabId) : held.delete(tabId)),
    /** tabId's act ended: its events are no longer watched. */
    stopAct(tabId) {
      acting.delete(tabId);
      actWindows.delete(tabId);
      dialogs.delete(tabId);
      announced.delete(tabId);
    },
  };
}

// ---- the debugger session --------------------------------------------------------------------

/**
 * One debugger session per step: attach, Page events on, a dialog left open before the step
 * cancelled (and noted), fn(send), detach always, the whole bounded. deps: chrome (debugger),
 * setTimeout, clearTimeout, log, noteDialog (createDebuggerWatch). Returns
 * withDebugger(tabId, boundMs, fn).
 */
function createDebuggerSessions({ chrome, setTimeout, clearTimeout, log, noteDialog, watch }) {
  const kept = new Map(); // tabId -> the timer that dismisses its dialog: its session is held

  /**
   * Ends tabId's held session: its dialog dismissed (Cancel), the debugger detached. The
   * dialog timeout, a close of the tab, and a gone tab end it.
   */
  async function release(tabId) {
    const timer = kept.get(tabId);
    if (timer === undefined) return;
    kept.delete(tabId);
    clearTimeout?.(timer);
    watch.hold(tabId, false);
    const target = { tabId };
    if (watch.shownDialog(tabId)) {
      watch.forgetDialog(tabId);
      await chrome.debugger.sendCommand(target, "Page.handleJavaScriptDialog", { accept: false }).catch(() => {});
    }
    await chrome.debugger.detach(target).catch(() => {}); // gone with its tab: nothing to detach
  }

  /** Keeps tabId's session while its dialog shows, bounded by DIALOG_TIMEOUT_MS. */
  function keep(tabId) {
    watch.hold(tabId, true);
    kept.set(
      tabId,
      setTimeout(() => {
        log.warn?.(`tabwarden: dismissing the dialog nobody answered on tab ${tabId} after ${DIALOG_TIMEOUT_MS / 1000} s`);
        release(tabId);
      }, DIALOG_TIMEOUT_MS),
    );
  }

  async function withDebugger(tabId, boundMs, fn) {
    const target = { tabId };
    const reused = kept.has(tabId);
    if (reused) {
      // The session that saw the tab's dialog: a new one would be told of none.
      clearTimeout?.(kept.get(tabId));
      kept.delete(tabId);
      watch.hold(tabId, false);
    } else {
      try {
        await chrome.debugger.attach(target, "1.3");
      } catch (e) {
        const msg = String(e?.message ?? e);
        if (/no tab with/i.test(msg)) throw new ActRefusal("not_found", `tab ${tabId} not found`);
        // "Another debugger is already attached" (DevTools open on the tab), or a page Chrome
        // protects (the web store, chrome:// pages).
        throw new ActRefusal("failed", `cannot attach to tab ${tabId} (${clip(msg, 300)}); close DevTools on that tab and retry`);
      }
    }
    const send = (method, params) => chrome.debugger.sendCommand(target, method, params ?? {});
    let timer = null;
    const abandoned = new Promise((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ActRefusal(
              "timeout",
              `tab ${tabId} did not answer within ${Math.round(boundMs / 1000)} s (a JavaScript dialog is open, or a script keeps the page busy): the step was abandoned; the page is left to the user`,
            ),
          ),
        boundMs,
      );
    });
    // A dialog the step's input opens stops the step there: the call waiting on the page
    // would wait until it is answered. The step returns it, and the session stays.
    let stopWaiting = () => {};
    const opened = new Promise((resolve) => {
      stopWaiting = watch.onDialog(tabId, (dialog) => resolve({ dialog }));
    });
    try {
      const running = reused ? fn(send) : attachedSteps(tabId, send, fn);
      running.catch(() => {}); // settles (rejected) once the debugger detaches
      const r = await Promise.race([running, abandoned, opened]);
      const d = watch.shownDialog(tabId);
      return d && !r?.dialog ? { ...r, dialog: d } : r;
    } finally {
      stopWaiting();
      clearTimeout?.(timer);
      if (watch.shownDialog(tabId)) {
        keep(tabId);
      } else {
        try {
          await chrome.debugger.detach(target);
        } catch (e) {
          log.warn?.(`tabwarden: detach from tab ${tabId}:`, e?.message);
        }
      }
    }
  }

  /** What every act does first on its debugger session, then fn. */
  async function attachedSteps(tabId, send, fn) {
    // Page events tell which tabs this tab opens (Page.windowOpen, see claimOpen) and of
    // JavaScript dialogs (onDebuggerEvent).
    await send("Page.enable");
    // The tab's out-of-process frames, announced as flattened child sessions (frames.js).
    await send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: "iframe" }] }).catch(() => {});
    // A dialog the page opened between steps may not be reported to a new session; answering
    // "no dialog" tells. One that is showing is cancelled (the user left it; the step would
    // act on a frozen page), and the step fails saying so.
    try {
      await send("Page.handleJavaScriptDialog", { accept: false });
      noteDialog(tabId, "a dialog (open before the step)");
    } catch {
      /* no dialog is showing: the usual case */
    }
    return fn(send);
  }

  return { withDebugger, release };
}

// ---- targeting and observation in the page: the tabwarden world --------------------------------

/**
 * The tabwarden worlds this worker initialised, one nonce per tab. deps: source
 * (createPageSource), nonce() → a fresh world nonce. Returns pageOf(tabId, send) and
 * forgetTab(tabId).
 */
function createPageWorlds({ source, nonce: nonceImpl }) {
  const nonces = new Map(); // tabId -> nonce of the tabwarden world this worker initialised there

  /**
   * The page functions of one debugger session: page(op, args) evaluates the bundled page.js
   * in the tabwarden world of the main frame and returns its value (a page error is thrown as
   * the act's refusal). The world is made (or found again: Chrome keeps one world per name and
   * document) and initialised with a fresh nonce on first use, and again once when the
   * document changed under us (a navigation during a wait destroys the context:
   * world_mismatch or "Cannot find context").
   */
  function pageOf(tabId, send) {
    let world = null; // {contextId, nonce}
    async function open() {
      const src = await source();
      const tree = await send("Page.getFrameTree");
      const frameId = tree?.frameTree?.frame?.id;
      if (typeof frameId !== "string") throw new Error("the tab has no main frame");
      const w = await send("Page.createIsolatedWorld", { frameId, worldName: WORLD_NAME });
      // Chrome hands back the same world for the same document across debugger sessions:
      // the world this worker initialised for an earlier act keeps its document id and refs.
      // init (a new document id, no refs) only for a world that does not know our nonce (a
      // new document, or a world this worker never initialised).
      const known = nonces.get(tabId);
      if (known) {
        const v = await evaluate(src, w.executionContextId, "info", { world: known });
        if (v && !v.error) {
          world = { contextId: w.executionContextId, nonce: known };
          return;
        }
      }
      const nonce = nonceImpl();
      const v = await evaluate(src, w.executionContextId, "init", { world: nonce });
      if (v?.error) throw new Error(`page.init: ${clip(String(v.error.message ?? v.error.reason), 300)}`);
      nonces.set(tabId, nonce);
      world = { contextId: w.executionContextId, nonce };
    }
    async function evaluate(src, contextId, op, args) {
      const r = await send("Runtime.evaluate", {
        expression: `(${src})(${JSON.stringify(op)}, ${JSON.stringify(args)})`,
        contextId,
        returnByValue: true,
        awaitPromise: true,
      });
      if (r?.exceptionDetails) {
        throw new Error(`page.${op} threw: ${clip(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text ?? "", 300)}`);
      }
      return r?.result?.value;
    }
    async function page(op, args) {
      let v;
      for (let attempt = 0; ; attempt++) {
        if (!world) await open();
        try {
          v = await evaluate(await source(), world.contextId, op, { ...args, world: world.nonce });
        } catch (e) {
          if (attempt === 0 && /context/i.test(String(e?.message ?? e))) {
            world = null; // the document changed: a new world, once
            continue;
          }
          throw e;
        }
        if (attempt === 0 && v?.error?.reason === "world_mismatch") {
          world = null;
          continue;
        }
        break;
      }
      if (v && typeof v === "object" && v.error) throw pageRefusal(v.error);
      return v;
    }
    /** The world page() last used: {contextId, nonce} (frames.js calls page.js on elements in it). */
    page.world = () => world;
    return page;
  }

  /** The tab is gone: forget its world. */
  function forgetTab(tabId) {
    nonces.delete(tabId);
  }

  return { pageOf, forgetTab };
}

// ---- the verbs -------------------------------------------------------------------------------
//
// Each takes the debugger session's send and page functions (or the chrome API, for navigate)
// and one validated step's fields.

/** click: a real left click at the point page.js locates for the target. */
async function click(send, page, t, fr) {
  const at = fr ? await fr.locateIn("locate", t) : await page("locate", { target: t });
  const x = Number(at?.x);
  const y = Number(at?.y);
  if (!Number.isFinite(x) || !Number.isFinite(y)) throw new Error("page.locate returned no point");
  // Into a frame of another process: its own session, at its coordinates (frames.js).
  const to = fr && at.session ? (m, p) => fr.sendTo(at.session, m, p) : send;
  // Press and release only: a mouseMoved to a background tab is acknowledged only after
  // Chrome's ~5 s input timeout (a hidden tab renders no frames).
  await to("Input.dispatchMouseEvent", { type: "mousePressed", x, y, button: "left", buttons: 1, clickCount: 1 });
  await to("Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button: "left", buttons: 0, clickCount: 1 });
}

/**
 * hover: moves the pointer over the point page.js locates for the target (no button). A
 * mouseMoved to a hidden tab is acknowledged only after Chrome's input timeout (about 5 s), which
 * the step waits out: the move itself has reached the page.
 */
async function hover(send, page, t, fr) {
  const at = fr ? await fr.locateIn("locate", t) : await page("locate", { target: t });
  const x = Number(at?.x);
  const y = Number(at?.y);
  if (!Number.isFinite(x) || !Number.isFinite(y)) throw new Error("page.locate returned no point");
  const to = fr && at.session ? (m, p) => fr.sendTo(at.session, m, p) : send;
  await to("Input.dispatchMouseEvent", { type: "mouseMoved", x, y, button: "none", buttons: 0 });
}

/** type: focuses the target in the page (none: the focused element), then inserts the text. */
async function typeText(send, page, s, fr) {
  if (s.target) await (fr ? fr.locateIn("focus", s.target) : page("focus", { target: s.target }));
  await send("Input.insertText", { text: s.text });
}

/**
 * screenshot: Page.captureScreenshot of the viewport, or of the part of the target's box inside it
 * (page.js shotBox: it never scrolls). A hidden tab is refused (page_not_visible): Chrome draws no
 * frame of it and the capture would wait for one for ever, while bringing it to the front would
 * take the user's focus. An image over maxBytes is answered with its size only.
 */
async function screenshot(send, page, s) {
  const box = await page("shotBox", { target: s.target });
  if (box?.hidden) {
    throw new ActRefusal(
      "page_not_visible",
      "the page is not shown (a background tab, or a minimized window): Chrome draws no picture of a hidden page, and tabwarden never brings a tab to the front (the user's focus is theirs). Observe reads the page's text without a picture; a window opened in a window of its own shows its page",
    );
  }
  const n = (v) => (Number.isFinite(v) ? v : 0);
  const params = { format: s.format };
  if (s.format === "jpeg") params.quality = s.quality || 80;
  if (s.target || s.scale !== 1) {
    params.clip = { x: n(box?.pageX) + n(box?.x), y: n(box?.pageY) + n(box?.y), width: n(box?.width), height: n(box?.height), scale: s.scale };
  }
  const r = await send("Page.captureScreenshot", params);
  const data = typeof r?.data === "string" ? r.data : "";
  if (data === "") throw new Error("Page.captureScreenshot answered no image");
  const size = Math.floor((data.length * 3) / 4) - (data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0);
  if (size > s.maxBytes) return { screenshot: { format: s.format, size } };
  return { screenshot: { format: s.format, size, data } };
}

/** A fill's refusal at field i: the field named, and what was filled before it. */
function fieldRefusal(e, i, done) {
  if (!(e instanceof ActRefusal)) throw e;
  throw new ActRefusal(e.reason, `field ${i}: ${e.message}; ${done}`, e.candidates, e.document, e.epoch);
}

function filledBefore(i) {
  if (i === 0) return "no field was filled";
  if (i === 1) return "field 0 was filled";
  return `fields 0 to ${i - 1} were filled`;
}

/**
 * fill: page.js checks every field first (field: a text field the target names), then each is
 * focused with its content selected (fillFocus) and its text inserted, replacing it.
 */
async function fill(send, page, fields, fr) {
  const run = (op, t) => (fr ? fr.locateIn(op, t) : page(op, { target: t }));
  for (let i = 0; i < fields.length; i++) {
    await run("field", fields[i].target).catch((e) => fieldRefusal(e, i, filledBefore(0)));
  }
  for (let i = 0; i < fields.length; i++) {
    await run("fillFocus", fields[i].target).catch((e) => fieldRefusal(e, i, filledBefore(i)));
    await send("Input.insertText", { text: fields[i].text });
  }
}

/** press: keyDown (with the text it types, none for a shortcut) and keyUp of a parsed key. */
async function press(send, k) {
  const base = { key: k.key, code: k.code, windowsVirtualKeyCode: k.keyCode, modifiers: k.modifiers };
  if (k.text !== undefined) {
    await send("Input.dispatchKeyEvent", { type: "keyDown", ...base, text: k.text, unmodifiedText: k.text });
  } else {
    await send("Input.dispatchKeyEvent", { type: "rawKeyDown", ...base });
  }
  await send("Input.dispatchKeyEvent", { type: "keyUp", ...base });
}

/** wait (with text): polls page.js's hasText every WAIT_POLL_MS until s.timeoutMs. */
async function waitText(page, s, { now, sleep }) {
  const deadline = now() + s.timeoutMs;
  for (;;) {
    const v = await page("hasText", { text: s.text });
    if (v === true || v?.found === true) return;
    if (now() >= deadline) throw new ActRefusal("timeout", `text ${JSON.stringify(clip(s.text, 100))} did not appear within ${s.timeoutMs} ms`);
    await sleep(WAIT_POLL_MS);
  }
}

/** navigate: loads url in the tab (never activating it) and waits until it has loaded, bounded. */
async function navigate(chrome, tabId, url, sleep) {
  await loading(chrome, tabId, sleep, () => chrome.tabs.update(tabId, { url }));
}

/**
 * back, forward: one entry through the tab's history as the browser holds it
 * (Page.getNavigationHistory, Page.navigateToHistoryEntry over one short debugger session, as
 * the cdp driver does: chrome.tabs.goBack skips the entries Chrome's back button skips, which
 * on a page nobody clicked is all of them); reload: chrome.tabs.reload. Never activating the
 * tab; each waits until the document it loads has loaded, bounded. No entry that way is the
 * no_history refusal, and nothing loads.
 */
async function history(chrome, tabId, kind, sleep, withDebugger) {
  if (kind === "reload") {
    await loading(chrome, tabId, sleep, () => chrome.tabs.reload(tabId));
    return;
  }
  await loading(chrome, tabId, sleep, () =>
    withDebugger(tabId, STEP_BOUND_MS, async (send) => {
      const h = await send("Page.getNavigationHistory");
      const entries = Array.isArray(h?.entries) ? h.entries : [];
      const at = Number.isInteger(h?.currentIndex) ? h.currentIndex : -1;
      const to = at + (kind === "back" ? -1 : 1);
      if (to < 0 || to >= entries.length) {
        const [dir, what] = kind === "back" ? ["earlier", "back"] : ["later", "forward"];
        throw new ActRefusal(
          "no_history",
          `the page (${clip(String(entries[at]?.url ?? ""), 1024)}) has no ${dir} entry in its history to go ${what} to; nothing was loaded. Navigate to the url you want instead`,
        );
      }
      await send("Page.navigateToHistoryEntry", { entryId: entries[to].id });
    }),
  );
}

/** Runs start (which makes the tab load a document) and waits until the tab has loaded, bounded. */
async function loading(chrome, tabId, sleep, start) {
  let done;
  const loaded = new Promise((r) => (done = r));
  let sawLoading = false;
  const listener = (id, change) => {
    if (id !== tabId) return;
    if (change.status === "loading") sawLoading = true;
    if (change.status === "complete" && sawLoading) done();
  };
  chrome.tabs.onUpdated.addListener(listener);
  try {
    try {
      await start();
    } catch (e) {
      if (/no tab with/i.test(String(e?.message ?? e))) throw new ActRefusal("not_found", `tab ${tabId} not found`);
      throw e;
    }
    await Promise.race([loaded, sleep(NAVIGATE_TIMEOUT_MS)]);
  } finally {
    chrome.tabs.onUpdated.removeListener(listener);
  }
}

// ---- the actor -------------------------------------------------------------------------------

/** The default world nonce: 16 random bytes, hex. */
function randomNonce() {
  const a = new Uint8Array(16);
  globalThis.crypto.getRandomValues(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Builds the actor from the parts above: the act queue per tab, the debugger watch and
 * sessions, the page worlds and the verbs.
 *
 * deps: chrome, now, setTimeout, clearTimeout,
 * loadPageSource() → string (the extension's page.js), log, nonce() (optional).
 * Returns run, onDebuggerEvent, claimOpen, forgetTab.
 */
export function createActor(deps) {
  const { chrome, now, log } = deps;
  const sleep = (ms) => new Promise((r) => deps.setTimeout(r, ms));
  const watch = createDebuggerWatch({ chrome, now, log });
  const sessions = createDebuggerSessions({ chrome, setTimeout: deps.setTimeout, clearTimeout: deps.clearTimeout, log, noteDialog: watch.noteDialog, watch });
  const pageSource = createPageSource(deps.loadPageSource);
  const worlds = createPageWorlds({ source: pageSource, nonce: deps.nonce ?? randomNonce });
  const frames = createFrames({ chrome });
  const tails = new Map(); // tabId -> tail promise of that tab's acts

  /** Runs task after the earlier acts on tabId settled. */
  function perTab(tabId, task) {
    const run = (tails.get(tabId) ?? Promise.resolve()).then(task);
    const tail = run.catch(() => {});
    tails.set(tabId, tail);
    tail.then(() => {
      if (tails.get(tabId) === tail) tails.delete(tabId);
    });
    return run;
  }

  /** Runs one validated step on tabId: navigate and a bare wait without the debugger, the rest in one debugger session. */
  async function perform(tabId, s, policy) {
    // A JavaScript dialog blocks the page: only a dialog step runs while one shows, and only
    // while one shows.
    const shown = watch.shownDialog(tabId);
    if (shown && s.kind !== "dialog") {
      throw new ActRefusal(
        "dialog_open",
        `the page shows a JavaScript ${shown.type} ${JSON.stringify(shown.message)} and nothing runs on it until it is answered; nothing ran. Answer it first with a Dialog step (answer Accept or Dismiss; text answers a prompt)`,
      );
    }
    if (!shown && s.kind === "dialog") {
      throw new ActRefusal("no_dialog", `the page shows no JavaScript dialog (none opened, or it was answered or dismissed after ${DIALOG_TIMEOUT_MS / 60_000}m0s); nothing ran. Observe to see the page`);
    }
    if (s.kind === "navigate") {
      await navigate(chrome, tabId, s.url, sleep);
      return {};
    }
    if (s.kind === "back" || s.kind === "forward" || s.kind === "reload") {
      await history(chrome, tabId, s.kind, sleep, sessions.withDebugger);
      // A document Back or Forward restores from the back/forward cache keeps its tabwarden
      // world, and so its document id and refs: forgotten here, the world is initialised
      // afresh on the next step, and refs observed before the move are stale, as after any
      // load (and as the cdp driver has them).
      worlds.forgetTab(tabId);
      return {};
    }
    if (s.kind === "wait" && !s.text) {
      await sleep(s.timeoutMs);
      return {};
    }
    const bound = STEP_BOUND_MS + (s.kind === "wait" ? s.timeoutMs : 0);
    return sessions.withDebugger(tabId, bound, async (send) => {
      const page = worlds.pageOf(tabId, send);
      // Frames of other origins or processes (frames.js), when the tab has any.
      const fr = ["observe", "click", "hover", "select", "type", "fill", "upload"].includes(s.kind) ? frames.of(tabId, send, page, pageSource, policy) : null;
      const withFrames = fr && (await fr.hasFrames()) ? fr : null;
      switch (s.kind) {
        case "observe": {
          const args = { max: s.maxElements, outlineOffset: s.outlineOffset, outlineBytes: OUTLINE_BYTES };
          return { observation: observation(withFrames ? await withFrames.observe(args) : await page("observe", args)) };
        }
        case "click":
          await click(send, page, s.target, withFrames);
          return {};
        case "hover":
          await hover(send, page, s.target, withFrames);
          return {};
        case "select":
          // page.js sets the drop-down's value and fires input and change, as a choice would.
          if (withFrames) await withFrames.locateIn("select", s.target, { text: s.text });
          else await page("select", { target: s.target, text: s.text });
          return {};
        case "upload":
          // page.js builds the files in the isolated world, sets the input's files and fires
          // input and change, as a pick in the file chooser would; no chooser opens.
          if (withFrames) await withFrames.locateIn("upload", s.target, { files: s.files });
          else await page("upload", { target: s.target, files: s.files });
          return {};
        case "type":
          await typeText(send, page, s, withFrames);
          return {};
        case "fill":
          await fill(send, page, s.fields, withFrames);
          return {};
        case "press":
          await press(send, s.key);
          return {};
        case "scroll":
          await page("scroll", { dx: s.dx, dy: s.dy });
          return {};
        case "wait":
          await waitText(page, s, { now, sleep });
          return {};
        case "dialog": {
          // Over the session that saw it (withDebugger reuses it): OK with the prompt's text
          // (else its default), or Cancel.
          const d = watch.shownDialog(tabId);
          const params = { accept: s.accept };
          if (s.accept && d?.type === "prompt") params.promptText = s.text || d.defaultPrompt || "";
          watch.forgetDialog(tabId);
          await send("Page.handleJavaScriptDialog", params);
          return {};
        }
        case "screenshot":
          return screenshot(send, page, s);
      }
      throw invalid(`unknown step kind ${s.kind}`);
    });
  }

  /**
   * Runs one validated step on tabId for key. The caller checked ownership. Acts on one tab
   * are serialized; the act's window of attribution opens before anything runs.
   */
  function run({ key, tabId, step, mayAct, frames: policyArg }) {
    const policy = framePolicy(policyArg);
    return perTab(tabId, async () => {
      const tab = await mayAct();
      watch.startAct(tabId, key, tab?.windowId);
      frames.startAct(tabId);
      try {
        let result;
        try {
          result = await perform(tabId, step, policy);
        } catch (e) {
          // Frames the url policy has not answered for: nothing ran past the check.
          if (e instanceof FrameCheck) return { frameCheck: e.urls };
          throw e;
        }
        const seen = watch.dialogsSeen(tabId);
        if (seen?.length) {
          throw new ActRefusal(
            "failed",
            `the page opened a dialog, which tabwarden answered (beforeunload: leave; others: cancel) so that it would not block the page: ${seen.join(", ")}; observe to see the page now`,
          );
        }
        // The new pages the tab announced while the step ran, for the agent's settle: counted
        // only for a step run whole on one debugger session (its detach answered after every
        // event before it), not for navigate and the history moves, whose loads run outside.
        if (WATCHED.has(step.kind)) return { ...result, spawns: watch.announcedSeen(tabId) };
        return result;
      } finally {
        watch.stopAct(tabId);
        frames.stopAct(tabId);
      }
    });
  }

  return {
    run,
    onDebuggerEvent(source, method, params) {
      if (!frames.onEvent(source, method, params)) watch.onDebuggerEvent(source, method, params);
    },
    claimOpen: watch.claimOpen,
    /** tabId is gone: its world, and a session held for its dialog, are forgotten. */
    forgetTab(tabId) {
      worlds.forgetTab(tabId);
      frames.forgetTab(tabId);
      sessions.release(tabId);
      watch.forgetDialog(tabId);
    },
    /** Ends tabId's held session (its dialog dismissed) before a close attaches its own. */
    releaseTab: sessions.release,
  };
}
