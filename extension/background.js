// tabwarden MV3 service worker.
//
// The agent's `extension` driver is a loopback server (the *host*); this worker is its only
// client. The wire contract is docs/extension-protocol.md. In short:
//
//   * prove itself to the host and make the host prove itself first (a challenge-response
//     keyed by the pairing secret, both ways): the secret never crosses the socket, and a
//     peer that cannot prove it knows the secret is never obeyed,
//   * report tabs and windows (filtered: never incognito, never browser-internal pages),
//   * run a small set of curated commands (observe, open, adopt, bind, release, close,
//     cleanup, records, sessions): no evaluation, no CDP,
//   * keep the ownership ledger in chrome.storage.session (which tabs it opened for which
//     owner, which spawns it saw and adopted, which tabs are bound for use and never closed),
//     so cleanup still works after Chrome suspends and restarts this worker,
//   * serialize every ownership-changing decision through ONE promise chain, so the
//     "never close the user's last tab" check cannot be raced by a concurrent cleanup; the
//     tabs a close or cleanup decided to remove are removed concurrently, outside the chain
//     (a tab whose remove is in flight counts as gone for every later decision).
//
// Chrome may terminate a service worker at any moment and start a fresh one on the next event.
// So: every listener is registered synchronously at top level (see the bottom of this file),
// and nothing that must survive lives only in module globals: state is in
// chrome.storage.session. What the parts below keep in memory are process handles only (the
// socket and its timers, the queue's tail promise, the debugger sessions of running acts), all
// of which die with the worker anyway and are rebuilt from storage by start().
//
// The module is also importable from node (tests): createWorker() takes the chrome API and the
// platform functions as parameters; the auto-start at the bottom only runs inside Chrome.
//
// The worker is split by concern into ES modules, each a factory that receives what it needs
// and returns a small API; no part writes another part's state. createWorker is the
// composition root that wires them:
//
//   shapes.js      pure vocabulary and argument checks (no state)
//   handshake.js   the handshake's cryptography (no state)
//   store.js       createStore: reads of one chrome.storage area (no state of its own)
//   ledger.js      createLedger({chrome, session, now, log}): the ownership queue and the
//                  record lookups
//   step.js        validateStep, parseKey, the result shapes: a step checked before it is
//                  queued (no state)
//   act.js         createActor({chrome, now, ...}): the `act` command (one curated step
//                  with real input, through chrome.debugger) and the announcements of the
//                  tabs its page opens
//   connection.js  createConnection({chrome, session, local, ..., execute}): socket,
//                  handshake, status record, reconnect
//   ownership.js   createOwnership({chrome, session, ..., ledger}): open, adopt, bind, release,
//                  close, cleanup and the last-tab rule
//   events.js      createEvents({chrome, session, ..., ledger, actor, claimOwnTab, sendEvent}):
//                  observe and the tab and window events
//   pairing.js     createPairing({chrome, local, ..., connection}): the popup's messages
//
// This file keeps the one switch over the host's ops, and registers the listeners.

import { ActRefusal, createActor, validateStep } from "./act.js";
import { ALARM_NAME, ALARM_PERIOD_MINUTES, CommandError, PENDING_TTL_MS, pendingKey, requireId, requireOwner } from "./shapes.js";
import { createStore } from "./store.js";
import { createLedger } from "./ledger.js";
import { createConnection } from "./connection.js";
import { createOwnership } from "./ownership.js";
import { createEvents } from "./events.js";
import { createPairing } from "./pairing.js";

export * from "./shapes.js";
export * from "./handshake.js";

/**
 * Builds the worker around a chrome API object. Nothing touches the browser until register()
 * and start() are called.
 *
 * deps: WebSocket, fetch, setTimeout, clearTimeout, now, console. Defaults are the globals.
 */
export function createWorker(chrome, deps = {}) {
  const WebSocketImpl = deps.WebSocket ?? globalThis.WebSocket;
  const fetchImpl = deps.fetch ?? ((...a) => globalThis.fetch(...a));
  const setTimer = deps.setTimeout ?? ((fn, ms) => globalThis.setTimeout(fn, ms));
  const clearTimer = deps.clearTimeout ?? ((id) => globalThis.clearTimeout(id));
  const now = deps.now ?? (() => Date.now());
  const log = deps.console ?? globalThis.console;
  const cryptoImpl = deps.crypto ?? globalThis.crypto;

  const session = createStore(chrome.storage.session);
  const local = chrome.storage.local;

  // The composition root: each part gets exactly the parts it calls.
  const actor = createActor({
    chrome,
    now,
    setTimeout: setTimer,
    clearTimeout: clearTimer,
    log,
    // The bundled page functions: the extension's own page.js, never anything from the host.
    loadPageSource: deps.loadPageSource ?? (async () => (await fetchImpl(chrome.runtime.getURL("page.js"))).text()),
  });
  const ledger = createLedger({ chrome, session, now, log });
  const connection = createConnection({
    chrome,
    session,
    local,
    now,
    log,
    setTimer,
    clearTimer,
    WebSocket: WebSocketImpl,
    crypto: cryptoImpl,
    execute, // a command frame's reply (below)
  });
  const ownership = createOwnership({ chrome, session, now, setTimer, clearTimer, ledger, releaseTab: (tabId) => actor.releaseTab(tabId) });
  const events = createEvents({
    chrome,
    session,
    now,
    log,
    ledger,
    actor,
    claimOwnTab: ownership.claimOwnTab,
    sendEvent: connection.sendEvent,
  });
  const pairing = createPairing({ chrome, local, now, fetch: fetchImpl, crypto: cryptoImpl, connection });

  // ---- commands --------------------------------------------------------------------------------

  /** Runs one host command and returns the result frame. Never throws. */
  async function execute(cmd) {
    const id = cmd?.id;
    try {
      const result = await dispatch(cmd?.op, cmd?.args ?? {});
      return { type: "result", id, ok: true, result };
    } catch (e) {
      if (e instanceof CommandError || e instanceof ActRefusal) {
        const error = { reason: e.reason, message: e.message };
        if (Array.isArray(e.candidates)) error.candidates = e.candidates;
        if (typeof e.document === "string") error.document = e.document;
        if (Number.isSafeInteger(e.epoch)) error.epoch = e.epoch;
        return { type: "result", id, ok: false, error };
      }
      log.warn(`tabwarden: ${cmd?.op} failed:`, e?.message);
      return { type: "result", id, ok: false, error: { reason: "failed", message: String(e?.message ?? e) } };
    }
  }

  // The one switch over op. Ownership-changing ops go through the queue.
  function dispatch(op, args) {
    switch (op) {
      case "observe":
        return events.observe();
      case "open":
        return ledger.serial(() => ownership.open(args));
      case "adopt":
        return ledger.serial(() => ownership.adopt(args));
      case "bind":
        return ledger.serial(() => ownership.bind(args));
      case "release":
        return ledger.serial(() => ownership.release(args));
      case "close": {
        const owner = requireOwner(args); // refuse before queueing
        const tabId = requireId(args.tabId, "tabId");
        return ownership.closeOwned(owner, tabId); // decided in the queue, removed outside it
      }
      case "cleanup": {
        const owner = requireOwner(args);
        return ownership.cleanup(owner); // likewise
      }
      case "records":
        return ledger.serial(ledger.records); // a snapshot between, not during, ownership changes
      case "sessions":
        return ledger.storeSessions(args);
      case "act": {
        // Refuse malformed calls before anything runs; the ownership check runs inside the
        // tab's act queue, right before the step.
        const owner = requireOwner(args);
        const tabId = requireId(args.tabId, "tabId");
        const key = args.key ?? "";
        if (typeof key !== "string" || key.length > 256) throw new CommandError("invalid_args", "key must be a string (the action's key)");
        const step = validateStep(args.step);
        // frames: the url policy's answers for the tab's cross-origin frames ({allowed,
        // refused}: urls; absent: no policy), see frames.js.
        return actor.run({ key, tabId, step, mayAct: () => ledger.mayAct(owner, tabId), frames: args.frames });
      }
      default:
        return Promise.reject(new CommandError("unknown_op", `unknown op ${JSON.stringify(op)}`));
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  /** Adds every listener. Call synchronously during the worker's first turn. */
  function register() {
    chrome.tabs.onCreated.addListener(events.onTabCreated);
    chrome.tabs.onUpdated.addListener(events.onTabUpdated);
    chrome.tabs.onRemoved.addListener(events.onTabRemoved);
    chrome.windows.onCreated.addListener(events.onWindowCreated);
    chrome.windows.onRemoved.addListener(events.onWindowRemoved);
    chrome.runtime.onMessage.addListener(pairing.onMessage);
    chrome.debugger?.onEvent?.addListener(actor.onDebuggerEvent);
    chrome.runtime.onStartup.addListener(() => start());
    chrome.runtime.onInstalled.addListener(() => start());
    chrome.alarms.onAlarm.addListener((alarm) => {
      if (alarm?.name === ALARM_NAME) connection.ensureConnected();
    });
  }

  /** Recovers from storage and (re)connects. Idempotent; runs on every worker start. */
  async function start() {
    try {
      if (!(await chrome.alarms.get(ALARM_NAME))) {
        await chrome.alarms.create(ALARM_NAME, { periodInMinutes: ALARM_PERIOD_MINUTES });
      }
      // A marker can only outlive its open when a worker died mid-open; expire old ones so they
      // never claim a tab the user opens much later.
      const t = now();
      const stale = (await session.withPrefix("pending:")).filter((m) => !(t - m.at < PENDING_TTL_MS));
      if (stale.length) await session.remove(stale.map((m) => pendingKey(m.owner)));
    } catch (e) {
      log.warn("tabwarden: start:", e?.message);
    }
    await connection.ensureConnected();
  }

  return {
    register,
    start,
    execute,
    pair: pairing.pair,
    ensureConnected: connection.ensureConnected,
    forget: pairing.forget,
    /** Resolves once everything queued so far has run (tests). */
    idle: () =>
      ledger
        .idle()
        .then(() => connection.handshakeSettled())
        .then(() => connection.statusSettled()),
    /** The live socket, if any (tests and debugging). */
    get socket() {
      return connection.socket;
    },
  };
}


// ---------------------------------------------------------------------------------------------
// Auto-start inside Chrome. Listeners are registered synchronously in this first turn, as MV3
// requires for events that wake a terminated worker.

function autoStart() {
  const chromeApi = globalThis.chrome;
  if (!chromeApi?.runtime?.id || !chromeApi.tabs) return null; // imported by node tests
  const worker = createWorker(chromeApi);
  worker.register();
  worker.start();
  return worker;
}

export const worker = autoStart();
