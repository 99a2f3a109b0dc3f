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
//   * serialize every ownership-changing operation through ONE promise chain, so the
//     "never close the user's last tab" check cannot be raced by a concurrent cleanup.
//
// Chrome may terminate a service worker at any moment and start a fresh one on the next event.
// So: every listener is registered synchronously at top level (see the bottom of this file),
// and nothing that must survive lives only in module globals: state is in
// chrome.storage.session. The worker context (ctx) that createWorker builds holds process
// handles only (the socket, timers, the queue's tail promise), all of which die with the worker
// anyway and are rebuilt from storage by start().
//
// The module is also importable from node (tests): createWorker() takes the chrome API and the
// platform functions as parameters; the auto-start at the bottom only runs inside Chrome.
//
// The `act` command (one curated step with real input, through chrome.debugger) lives in
// act.js; ownership.js and events.js check ownership and attribute the tabs an act makes appear.
//
// The worker is split by concern into ES modules: shapes.js (pure vocabulary and argument
// checks), handshake.js (the handshake's cryptography), ledger.js (the ownership queue and
// the records), connection.js (socket, handshake, reconnect), ownership.js (open, adopt, bind,
// release, close, cleanup and the last-tab rule), events.js (observe and the tab and window
// events), pairing.js (the popup's messages). This file builds them into one worker, keeps
// the one switch over the host's ops, and registers the listeners.

import { ActRefusal, createActor, validateStep } from "./act.js";
import { ALARM_NAME, ALARM_PERIOD_MINUTES, CommandError, PENDING_TTL_MS, pendingKey, requireId, requireOwner } from "./shapes.js";
import { installLedger } from "./ledger.js";
import { installConnection } from "./connection.js";
import { installOwnership } from "./ownership.js";
import { installEvents } from "./events.js";
import { installPairing } from "./pairing.js";

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

  const session = chrome.storage.session;
  const local = chrome.storage.local;
  const actor = createActor({
    chrome,
    session,
    now,
    setTimeout: setTimer,
    clearTimeout: clearTimer,
    log,
    // The bundled page functions: the extension's own page.js, never anything from the host.
    loadPageSource: deps.loadPageSource ?? (async () => (await fetchImpl(chrome.runtime.getURL("page.js"))).text()),
  });

  // The worker context: the platform, then the process handles only (see the header comment),
  // then every part's functions (installed below).
  const ctx = {
    chrome,
    session,
    local,
    now,
    log,
    setTimer,
    clearTimer,
    WebSocketImpl,
    fetchImpl,
    cryptoImpl,
    actor,
    ws: null, // the live WebSocket, if any
    welcomed: null, // the socket the host has welcomed (events and results go only there)
    connecting: null, // promise while a connect attempt reads storage and dials
    pingTimer: null,
    retryTimer: null,
    handshakeTimer: null,
    hsChain: Promise.resolve(), // frames of the current socket, handled in order
    queue: Promise.resolve(), // tail of the ownership queue
    connChain: Promise.resolve(), // orders writes of the "conn" status record
    // Tabs this worker created itself outside open (the last-tab rule's about:blank): never
    // attributed to an act.
    ownTabs: new Set(),
  };
  installLedger(ctx);
  installConnection(ctx);
  installOwnership(ctx);
  installEvents(ctx);
  installPairing(ctx);

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
        return ctx.observe();
      case "open":
        return ctx.serial(() => ctx.open(args));
      case "adopt":
        return ctx.serial(() => ctx.adopt(args));
      case "bind":
        return ctx.serial(() => ctx.bind(args));
      case "release":
        return ctx.serial(() => ctx.release(args));
      case "close": {
        const owner = requireOwner(args); // refuse before queueing
        const tabId = requireId(args.tabId, "tabId");
        return ctx.serial(() => ctx.closeOwned(owner, tabId));
      }
      case "cleanup": {
        const owner = requireOwner(args);
        return ctx.serial(() => ctx.cleanup(owner));
      }
      case "records":
        return ctx.serial(ctx.records); // a snapshot between, not during, ownership changes
      case "sessions":
        return ctx.storeSessions(args);
      case "act": {
        // Refuse malformed calls before anything runs; the ownership check runs inside the
        // tab's act queue, right before the step.
        const owner = requireOwner(args);
        const tabId = requireId(args.tabId, "tabId");
        const key = args.key ?? "";
        if (typeof key !== "string" || key.length > 256) throw new CommandError("invalid_args", "key must be a string (the action's key)");
        const step = validateStep(args.step);
        return actor.run({ key, tabId, step, mayAct: () => ctx.mayAct(owner, tabId) });
      }
      default:
        return Promise.reject(new CommandError("unknown_op", `unknown op ${JSON.stringify(op)}`));
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  /** Adds every listener. Call synchronously during the worker's first turn. */
  function register() {
    chrome.tabs.onCreated.addListener(ctx.onTabCreated);
    chrome.tabs.onUpdated.addListener(ctx.onTabUpdated);
    chrome.tabs.onRemoved.addListener(ctx.onTabRemoved);
    chrome.windows.onCreated.addListener(ctx.onWindowCreated);
    chrome.windows.onRemoved.addListener(ctx.onWindowRemoved);
    chrome.runtime.onMessage.addListener(ctx.onMessage);
    chrome.debugger?.onEvent?.addListener(actor.onDebuggerEvent);
    chrome.runtime.onStartup.addListener(() => start());
    chrome.runtime.onInstalled.addListener(() => start());
    chrome.alarms.onAlarm.addListener((alarm) => {
      if (alarm?.name === ALARM_NAME) ctx.ensureConnected();
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
      const stale = (await ctx.allWithPrefix("pending:")).filter((m) => !(t - m.at < PENDING_TTL_MS));
      if (stale.length) await session.remove(stale.map((m) => pendingKey(m.owner)));
      await actor.expireMarkers();
    } catch (e) {
      log.warn("tabwarden: start:", e?.message);
    }
    await ctx.ensureConnected();
  }

  Object.assign(ctx, { execute, dispatch, register, start });

  return {
    register,
    start,
    execute,
    pair: ctx.pair,
    ensureConnected: ctx.ensureConnected,
    forget: ctx.forget,
    /** Resolves once everything queued so far has run (tests). */
    idle: () => ctx.queue.then(() => ctx.hsChain).then(() => ctx.connChain),
    /** The live socket, if any (tests and debugging). */
    get socket() {
      return ctx.ws;
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
