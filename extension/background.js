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
// and nothing that must survive lives only in module globals. The globals kept inside
// createWorker are process handles (the socket, timers, the queue's tail promise), all of which
// die with the worker anyway and are rebuilt from storage by start().
//
// The module is also importable from node (tests): createWorker() takes the chrome API and the
// platform functions as parameters; the auto-start at the bottom only runs inside Chrome.
//
// The `act` command (one curated step with real input, through chrome.debugger) lives in
// act.js; this file checks ownership and attributes the tabs an act makes appear.

import { ActRefusal, createActor, validateStep } from "./act.js";

export const DEFAULT_PORT = 47321;
export const PING_INTERVAL_MS = 20_000;
export const BACKOFF_MIN_MS = 1_000;
export const BACKOFF_MAX_MS = 30_000;
// Periodic safety-net alarm: wakes a terminated worker so it reconnects even if every
// setTimeout died with the previous worker. 30 s is Chrome's minimum alarm period.
export const ALARM_NAME = "tabwarden-keepalive";
const ALARM_PERIOD_MINUTES = 0.5;
// A pending-open marker older than this is stale (its open died with a worker) and must not
// claim a tab the user creates later.
export const PENDING_TTL_MS = 60_000;
// A host that has not completed the handshake within this long is dropped (and retried with
// backoff): a squatter that just holds the socket open cannot keep the extension waiting.
export const HANDSHAKE_TIMEOUT_MS = 10_000;
// Frames are capped at 1 MiB by the host; keep individual strings bounded so one huge data:
// URL cannot push an observe snapshot over the limit.
const MAX_URL_CHARS = 8192;
const MAX_TITLE_CHARS = 1024;

// Pages that are never reported (docs/extension-protocol.md, "Shapes").
const HIDDEN_URL_PREFIXES = [
  "chrome://",
  "chrome-extension://",
  "devtools://",
  "chrome-untrusted://",
  "edge://",
  "view-source:",
];
const WINDOW_TYPES = new Set(["normal", "popup", "app", "panel"]);

// Storage layout. storage.session: rec:<tabId>, pending:<owner>, born:<windowId>,
// opener:<tabId>, attr:<tabId> (the act key an opener-less tab is attributed to), act:<key>
// (act.js: an act's window of attribution), conn, sessions. storage.local: key (the pairing key, base64url), port, and
// pairedAt, so the popup never reads the key. (An older build stored the raw token as `token`;
// it is turned into the key and dropped on the next connect.)
const recKey = (tabId) => `rec:${tabId}`;
const pendingKey = (owner) => `pending:${owner}`;
const bornKey = (windowId) => `born:${windowId}`;
const openerKey = (tabId) => `opener:${tabId}`;
const attrKey = (tabId) => `attr:${tabId}`;

// Record kinds (docs/extension-protocol.md "Ownership"): opened and spawned tabs are owned
// (closeable by their owner); a bound tab is only used, never closed.
export const KIND_OPENED = "opened";
export const KIND_SPAWNED = "spawned";
export const KIND_BOUND = "bound";
const OWNED_KINDS = new Set([KIND_OPENED, KIND_SPAWNED]);

/** The kind of a stored record; records of an older build carry `via` instead. */
function kindOf(rec) {
  if (rec?.kind) return rec.kind;
  return rec?.via === "adopt" ? KIND_SPAWNED : KIND_OPENED;
}

// ---------------------------------------------------------------------------------------------
// The handshake's cryptography (docs/extension-protocol.md "Handshake"). WebCrypto only.

const utf8 = new TextEncoder();

export function b64url(bytes) {
  let bin = "";
  for (const b of new Uint8Array(bytes)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromB64url(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** k = SHA-256("tabwarden-key-v1\n" + token): what both sides keep instead of the token. */
export async function deriveKey(token, cryptoImpl = globalThis.crypto) {
  return new Uint8Array(await cryptoImpl.subtle.digest("SHA-256", utf8.encode(`tabwarden-key-v1\n${token}`)));
}

export const hostProofMessage = (nonceE, nonceH, epoch) => `tabwarden-host-v1\n${nonceE}\n${nonceH}\n${epoch}`;
export const extProofMessage = (nonceH, nonceE) => `tabwarden-ext-v1\n${nonceH}\n${nonceE}`;
const KEY_ID_MESSAGE = "tabwarden-key-id-v1";
const NONCE_RE = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url without padding

function hmacKey(raw, cryptoImpl) {
  return cryptoImpl.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

async function hmac(raw, message, cryptoImpl) {
  return new Uint8Array(await cryptoImpl.subtle.sign("HMAC", await hmacKey(raw, cryptoImpl), utf8.encode(message)));
}

/** The key id the hello names, so a host paired with another key answers 4401 at once. */
export async function keyId(raw, cryptoImpl = globalThis.crypto) {
  return b64url((await hmac(raw, KEY_ID_MESSAGE, cryptoImpl)).slice(0, 16));
}

/** Constant-time check of the host's proof (WebCrypto's verify). */
async function verifyHostProof(raw, proof, nonceE, nonceH, epoch, cryptoImpl) {
  let sig;
  try {
    sig = fromB64url(proof);
  } catch {
    return false;
  }
  if (sig.length !== 32) return false;
  return cryptoImpl.subtle.verify("HMAC", await hmacKey(raw, cryptoImpl), sig, utf8.encode(hostProofMessage(nonceE, nonceH, epoch)));
}

/** A refusal with a stable snake_case reason, sent back as {ok:false,error:{reason,message}}. */
export class CommandError extends Error {
  constructor(reason, message) {
    super(message);
    this.reason = reason;
  }
}

// ---------------------------------------------------------------------------------------------
// Filtering and wire shapes (pure).

function isHiddenUrl(url) {
  return typeof url === "string" && HIDDEN_URL_PREFIXES.some((p) => url.startsWith(p));
}

/** Whether a chrome Tab may be reported to the host. Empty and about:blank urls are reported. */
export function isReportableTab(tab) {
  if (!tab || tab.incognito) return false;
  // A freshly created tab may still have url "" and the target in pendingUrl: check both.
  return !isHiddenUrl(tab.url) && !isHiddenUrl(tab.pendingUrl);
}

export function isReportableWindow(win) {
  return !!win && !win.incognito && WINDOW_TYPES.has(win.type ?? "normal");
}

function clip(s, n) {
  s = typeof s === "string" ? s : "";
  return s.length > n ? s.slice(0, n) : s;
}

/** Tab = {id, windowId, openerTabId?, url, title, active, index, attributed?} */
export function tabShape(tab, attributed) {
  const out = {
    id: tab.id,
    windowId: tab.windowId,
    url: clip(tab.url || tab.pendingUrl || "", MAX_URL_CHARS),
    title: clip(tab.title, MAX_TITLE_CHARS),
    active: !!tab.active,
    index: tab.index ?? 0,
  };
  if (Number.isInteger(tab.openerTabId)) out.openerTabId = tab.openerTabId;
  if (typeof attributed === "string" && attributed !== "") out.attributed = attributed;
  return out;
}

/** Window = {id, type, focused} */
export function windowShape(win) {
  return { id: win.id, type: win.type ?? "normal", focused: !!win.focused };
}

/** Record = {owner, tabId, windowId, createdWindow, kind, parent?}; internal fields are not sent. */
function recordShape(rec) {
  const out = { owner: rec.owner, tabId: rec.tabId, windowId: rec.windowId, createdWindow: !!rec.createdWindow, kind: kindOf(rec) };
  if (out.kind === KIND_SPAWNED && typeof rec.parent === "string" && rec.parent !== "") out.parent = rec.parent;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Argument validation (pure).

function requireOwner(args) {
  const owner = args?.owner;
  if (typeof owner !== "string" || owner === "") {
    throw new CommandError("owner_required", "an owner is required; tabwarden closes only what an owner created");
  }
  return owner;
}

function requireParent(args) {
  const parent = args?.parent;
  if (typeof parent !== "string" || parent === "") {
    throw new CommandError("invalid_args", "adopt needs the parent: the owner of the page that spawned the tab");
  }
  return parent;
}

// Chrome ids are integers on the wire; tolerate decimal strings (the Go side's representation).
function requireId(value, name) {
  if (Number.isInteger(value)) return value;
  if (typeof value === "string" && /^\d{1,15}$/.test(value)) return Number(value);
  throw new CommandError("invalid_args", `${name} must be an integer id`);
}

// open navigates somewhere the agent can see and the user can inspect: http(s) or a blank page.
// javascript:, data:, file: and browser-internal urls are refused (no evaluation across the seam).
function requireOpenUrl(url) {
  if (url === "about:blank") return url;
  let u;
  try {
    u = new URL(url);
  } catch {
    throw new CommandError("invalid_args", "url must be an absolute http(s) url or about:blank");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new CommandError("invalid_args", `url scheme ${u.protocol} is not allowed; use http(s) or about:blank`);
  }
  return u.href; // normalized the way Chrome reports tab.pendingUrl
}

function normalizeUrl(url) {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

function str(v, n = 512) {
  return typeof v === "string" ? clip(v, n) : v == null ? "" : clip(String(v), n);
}

// The popup's Session Monitor data: keep only known fields, bounded, as strings.
function sanitizeSessions(list) {
  if (!Array.isArray(list)) throw new CommandError("invalid_args", "sessions must be an array");
  return list.slice(0, 256).map((s) => ({
    namespace: str(s?.namespace),
    name: str(s?.name),
    thread: str(s?.thread),
    purpose: str(s?.purpose, 2048),
    phase: str(s?.phase),
    windows: (Array.isArray(s?.windows) ? s.windows : []).slice(0, 256).map((w) => ({
      name: str(w?.name),
      tabId: str(w?.tabId, 32),
      source: str(w?.source),
      disposition: str(w?.disposition),
    })),
  }));
}

// ---------------------------------------------------------------------------------------------

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

  // Process handles only; see the header comment.
  let ws = null; // the live WebSocket, if any
  let welcomed = null; // the socket the host has welcomed (events and results go only there)
  let connecting = null; // promise while a connect attempt reads storage and dials
  let pingTimer = null;
  let retryTimer = null;
  let handshakeTimer = null;
  let hsChain = Promise.resolve(); // frames of the current socket, handled in order
  let queue = Promise.resolve(); // tail of the ownership queue
  let connChain = Promise.resolve(); // orders writes of the "conn" status record
  // Tabs this worker created itself outside open (the last-tab rule's about:blank): never
  // attributed to an act.
  const ownTabs = new Set();

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

  // ---- storage helpers -------------------------------------------------------------------------

  async function getOne(area, key) {
    return (await area.get(key))[key];
  }

  async function allWithPrefix(prefix) {
    const all = await session.get(null);
    return Object.entries(all)
      .filter(([k]) => k.startsWith(prefix))
      .map(([, v]) => v);
  }

  function setConn(patch) {
    // Serialized read-modify-write; the popup renders this record.
    connChain = connChain
      .then(async () => {
        const cur = (await getOne(session, "conn")) ?? {};
        await session.set({ conn: { ...cur, ...patch, updatedAt: now() } });
      })
      .catch((e) => log.warn("tabwarden: storing connection state failed:", e?.message));
    return connChain;
  }

  // ---- socket ----------------------------------------------------------------------------------

  function send(frame) {
    return sendOn(ws, frame);
  }

  /**
   * Sends on one socket only if it is still the live, welcomed one. A reply to a command goes
   * out on the socket that carried the command or nowhere: after a reconnect (maybe to a
   * restarted agent whose command ids start over) an old command's reply must not reach the
   * new peer, where it could be matched to a different command.
   */
  function sendOn(sock, frame) {
    if (!sock || sock !== ws || sock !== welcomed || sock.readyState !== 1 /* OPEN */) return false;
    sock.send(JSON.stringify(frame));
    return true;
  }

  function sendEvent(event, body) {
    send({ type: "event", event, ...body });
  }

  function stopPing() {
    if (pingTimer !== null) clearTimer(pingTimer);
    pingTimer = null;
  }

  function stopHandshakeTimer() {
    if (handshakeTimer !== null) clearTimer(handshakeTimer);
    handshakeTimer = null;
  }

  // Chrome keeps a service worker alive while its WebSocket carries traffic at least every 30 s
  // (Chrome 116+); the host expects a frame every 20 s. One ping per 20 s satisfies both.
  function schedulePing() {
    stopPing();
    pingTimer = setTimer(() => {
      pingTimer = null;
      if (send({ type: "ping" })) schedulePing();
    }, PING_INTERVAL_MS);
  }

  async function scheduleReconnect() {
    if (retryTimer !== null) return;
    await connChain; // read the attempt count after every queued status write has landed
    const conn = (await getOne(session, "conn")) ?? {};
    const attempt = conn.attempt ?? 0;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempt);
    await setConn({ attempt: attempt + 1, nextRetryAt: now() + delay });
    if (retryTimer !== null) return;
    retryTimer = setTimer(() => {
      retryTimer = null;
      ensureConnected();
    }, delay);
  }

  /** The pairing key from storage; an older build's raw token is turned into the key here. */
  async function loadKey() {
    const { key, token } = await local.get(["key", "token"]);
    if (typeof key === "string" && key !== "") {
      try {
        const raw = fromB64url(key);
        if (raw.length === 32) return raw;
      } catch {
        /* fall through: unusable */
      }
      log.warn("tabwarden: the stored pairing key is unusable; pair again");
      return null;
    }
    if (typeof token === "string" && token !== "") {
      const raw = await deriveKey(token, cryptoImpl);
      await local.set({ key: b64url(raw) });
      await local.remove("token");
      return raw;
    }
    return null;
  }

  /**
   * Dials the host if paired and not already connected or dialing. Safe to call from any
   * trigger (start, alarm, retry timer, onStartup); concurrent calls share one attempt.
   */
  function ensureConnected() {
    if (ws || connecting) return connecting ?? Promise.resolve();
    connecting = (async () => {
      try {
        await connChain;
        const key = await loadKey();
        const { port } = await local.get("port");
        const conn = (await getOne(session, "conn")) ?? {};
        if (!key) {
          await setConn({ state: "unpaired" });
          return;
        }
        // 4401: the host does not know this key (revoked by a newer pairing or `tabwarden
        // unpair`). A host that failed to prove itself is not ours. Retrying would only hammer
        // it (or feed an impostor): wait for the user to press Reconnect or pair again.
        if (conn.state === "unauthorized" || conn.state === "host_unverified") return;
        if (ws) return;
        if (retryTimer !== null) {
          clearTimer(retryTimer);
          retryTimer = null;
        }
        dial(key, Number.isInteger(port) ? port : DEFAULT_PORT);
      } catch (e) {
        log.warn("tabwarden: connect failed:", e?.message);
      } finally {
        connecting = null;
      }
    })();
    return connecting;
  }

  function dial(key, port) {
    const url = `ws://127.0.0.1:${port}/v1/connect`;
    let sock;
    try {
      sock = new WebSocketImpl(url);
    } catch (e) {
      setConn({ state: "disconnected", lastError: `cannot open ${url}: ${e?.message}` });
      scheduleReconnect();
      return;
    }
    ws = sock;
    welcomed = null;
    setConn({ state: "connecting", port });
    // The handshake of this socket: hello → challenge (the host proves itself) → auth (we
    // prove ourselves) → welcome. Frames are handled one at a time, in order, on this chain,
    // because verifying a proof is asynchronous.
    const hs = { phase: "opening", nonceE: null, nonceH: null, epoch: null };
    let chain = Promise.resolve();
    const enqueue = (fn) => {
      chain = chain.then(fn).catch((e) => log.warn("tabwarden: frame:", e?.message));
      hsChain = chain;
    };
    stopHandshakeTimer();
    handshakeTimer = setTimer(() => {
      handshakeTimer = null;
      if (ws !== sock || welcomed === sock) return;
      dropSocket(sock, 1000, "handshake timeout");
      setConn({ state: "disconnected", epoch: null, lastError: "the host did not complete the handshake in time" });
      scheduleReconnect();
    }, HANDSHAKE_TIMEOUT_MS);

    sock.onopen = () => {
      enqueue(async () => {
        if (ws !== sock) return;
        const version = chrome.runtime.getManifest?.().version ?? "0";
        hs.nonceE = b64url(cryptoImpl.getRandomValues(new Uint8Array(32)));
        const kid = await keyId(key, cryptoImpl);
        if (ws !== sock || sock.readyState !== 1) return;
        // No secret here: a fresh nonce, and the key's id (a one-way function of the key).
        sock.send(JSON.stringify({ type: "hello", version, nonce: hs.nonceE, kid }));
        hs.phase = "challenge";
      });
    };
    sock.onmessage = (ev) => {
      if (ws !== sock) return;
      const data = ev.data;
      enqueue(() => onFrame(sock, hs, key, data));
    };
    sock.onerror = () => {
      // A close event always follows; it carries the useful information.
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return; // an old socket we replaced or dropped on purpose
      ws = null;
      welcomed = null;
      stopPing();
      stopHandshakeTimer();
      const code = ev?.code ?? 1006;
      if (code === 4401) {
        setConn({ state: "unauthorized", epoch: null, lastError: "the host does not know this pairing (4401): pair again" });
        return;
      }
      const why = code === 4409 ? "another connection is active (4409)" : `closed (${code}${ev?.reason ? ` ${ev.reason}` : ""})`;
      setConn({ state: "disconnected", epoch: null, lastError: why });
      scheduleReconnect();
    };
  }

  /** Detaches and closes a socket; its close event is then ignored. */
  function dropSocket(sock, code, reason) {
    if (ws === sock) ws = null;
    if (welcomed === sock) welcomed = null;
    stopPing();
    stopHandshakeTimer();
    try {
      sock.close(code, reason);
    } catch {
      /* already closed */
    }
  }

  /**
   * The peer on this port did not prove that it knows the pairing key: it is not our host
   * (maybe another local user who bound the port while the agent was down). Close, obey
   * nothing, tell the user, and do not retry by ourselves.
   */
  function hostFailed(sock, why) {
    dropSocket(sock, 4403, "host failed to prove itself");
    log.warn(`tabwarden: host failed to prove itself (${why}); not retrying`);
    return setConn({
      state: "host_unverified",
      epoch: null,
      lastError: `host failed to prove itself (${why}); not retrying: press Reconnect once the real agent runs, or pair again`,
      nextRetryAt: null,
    });
  }

  async function onFrame(sock, hs, key, data) {
    if (ws !== sock) return;
    let msg;
    try {
      msg = JSON.parse(typeof data === "string" ? data : String(data));
    } catch {
      msg = null;
    }
    if (hs.phase !== "welcomed") {
      // Until the host has proven itself and welcomed us, exactly the handshake's frames in
      // their order; anything else (a bare welcome, a command) is an impostor's.
      if (hs.phase === "challenge" && msg?.type === "challenge") {
        const { nonce, epoch, proof } = msg;
        if (typeof nonce !== "string" || !NONCE_RE.test(nonce) || !Number.isSafeInteger(epoch) || epoch < 1 || typeof proof !== "string") {
          return hostFailed(sock, "malformed challenge");
        }
        if (!(await verifyHostProof(key, proof, hs.nonceE, nonce, epoch, cryptoImpl))) {
          return hostFailed(sock, "wrong proof");
        }
        if (ws !== sock || sock.readyState !== 1) return;
        hs.nonceH = nonce;
        hs.epoch = epoch;
        sock.send(JSON.stringify({ type: "auth", proof: b64url(await hmac(key, extProofMessage(nonce, hs.nonceE), cryptoImpl)) }));
        hs.phase = "welcome";
        return;
      }
      if (hs.phase === "welcome" && msg?.type === "welcome" && msg.epoch === hs.epoch) {
        hs.phase = "welcomed";
        welcomed = sock;
        stopHandshakeTimer();
        setConn({ state: "connected", epoch: hs.epoch, lastError: null, attempt: 0, nextRetryAt: null, connectedAt: now() });
        schedulePing();
        return;
      }
      return hostFailed(sock, msg?.type ? `unexpected ${String(msg.type).slice(0, 32)} frame before the proof` : "unexpected frame");
    }
    switch (msg?.type) {
      case "pong":
      case "welcome":
        return;
      case "command":
        if (typeof msg.id !== "string") return; // cannot reply without an id
        // The reply goes back on this socket only (see sendOn).
        execute(msg).then((reply) => sendOn(sock, reply));
        return;
      default:
        return;
    }
  }

  function closeSocket(code = 1000, reason = "re-pairing") {
    const sock = ws;
    ws = null; // detach first so its close event is ignored
    welcomed = null;
    stopPing();
    stopHandshakeTimer();
    if (sock) {
      try {
        sock.close(code, reason);
      } catch {
        /* already closed */
      }
    }
  }

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
        return observe();
      case "open":
        return serial(() => open(args));
      case "adopt":
        return serial(() => adopt(args));
      case "bind":
        return serial(() => bind(args));
      case "release":
        return serial(() => release(args));
      case "close": {
        const owner = requireOwner(args); // refuse before queueing
        const tabId = requireId(args.tabId, "tabId");
        return serial(() => closeOwned(owner, tabId));
      }
      case "cleanup": {
        const owner = requireOwner(args);
        return serial(() => cleanup(owner));
      }
      case "records":
        return serial(records); // a snapshot between, not during, ownership changes
      case "sessions":
        return storeSessions(args);
      case "act": {
        // Refuse malformed calls before anything runs; the ownership check runs inside the
        // tab's act queue, right before the step.
        const owner = requireOwner(args);
        const tabId = requireId(args.tabId, "tabId");
        const key = args.key ?? "";
        if (typeof key !== "string" || key.length > 256) throw new CommandError("invalid_args", "key must be a string (the action's key)");
        const step = validateStep(args.step);
        return actor.run({ key, tabId, step, mayAct: () => mayAct(owner, tabId) });
      }
      default:
        return Promise.reject(new CommandError("unknown_op", `unknown op ${JSON.stringify(op)}`));
    }
  }

  async function observe() {
    const wins = await chrome.windows.getAll({ populate: true });
    const attributed = {};
    const openers = {};
    for (const [k, v] of Object.entries(await session.get(null))) {
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

  /** act's ownership check: the tab is recorded under owner (opened, spawned or bound). */
  async function mayAct(owner, tabId) {
    const rec = await getOne(session, recKey(tabId));
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
    const remembered = await getOne(session, openerKey(tab.id));
    return Number.isInteger(remembered) ? remembered : tab.openerTabId;
  }

  async function open(args) {
    const owner = requireOwner(args);
    const url = requireOpenUrl(args.url);
    const newWindow = args.newWindow === true;
    const windowId = newWindow ? null : requireId(args.windowId, "windowId");

    // Idempotent by owner: a retried open (the host lost our reply, or the worker restarted)
    // returns the tab it already has. An owner holds one live tab at most: one it adopted or
    // bound is not "opened", and open refuses instead of creating a second.
    const live = await liveRecordOf(owner);
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
    const maxTabId = await maxTabIdSeen();
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

  /** The owner's record whose tab is still open (an owner holds one live tab at most). */
  async function liveRecordOf(owner, exceptTabId) {
    const mine = (await allWithPrefix("rec:")).filter((r) => r.owner === owner && r.tabId !== exceptTabId).sort((a, b) => a.tabId - b.tabId);
    for (const rec of mine) {
      const tab = await tryGetTab(rec.tabId);
      if (tab) return { rec, tab };
    }
    return null;
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
    const tab = await tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) throw new CommandError("not_found", `tab ${tabId} not found`);
    const existing = await getOne(session, recKey(tabId));
    if (existing) {
      if (existing.owner === owner && kindOf(existing) === KIND_SPAWNED) {
        return { tabId, windowId: tab.windowId, createdWindow: !!existing.createdWindow };
      }
      throw new CommandError("in_use", `tab ${tabId} is recorded under another owner or as ${kindOf(existing)}`);
    }
    const other = await liveRecordOf(owner, tabId);
    if (other) throw new CommandError("in_use", `owner ${owner} already has tab ${other.rec.tabId}`);
    // Chrome may stop reporting openerTabId later (e.g. after the opener navigates or closes):
    // the opener seen at tabs.onCreated wins.
    // Or, for a tab without an opener, the act it appeared during is parent's (attr:<tabId>).
    const attributed = await getOne(session, attrKey(tabId));
    const opener = attributed ? undefined : await openerOf(tab);
    const openerRec = Number.isInteger(opener) ? await getOne(session, recKey(opener)) : undefined;
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
    const born = await getOne(session, bornKey(tab.windowId));
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
    const tab = await tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) throw new CommandError("not_found", `tab ${tabId} not found`);
    const existing = await getOne(session, recKey(tabId));
    if (existing) {
      if (existing.owner === owner && kindOf(existing) === KIND_BOUND) return { tabId, windowId: tab.windowId };
      throw new CommandError("in_use", `tab ${tabId} is recorded under another owner or as ${kindOf(existing)}`);
    }
    // A spawn of a recorded page belongs to that session's adoption. Between its creation and
    // the adopt, it is unrecorded: another namespace must not bind it in that window.
    const attributed = await getOne(session, attrKey(tabId));
    const opener = attributed ? undefined : await openerOf(tab);
    const openerRec = Number.isInteger(opener) ? await getOne(session, recKey(opener)) : undefined;
    if (openerRec) {
      throw new CommandError(
        "in_use",
        `tab ${tabId} was spawned by tab ${opener} of session ${openerRec.owner}'s page; it belongs to that session's adoption`,
      );
    }
    if (attributed) {
      throw new CommandError("in_use", `tab ${tabId} appeared during action ${attributed}, whose session adopts it`);
    }
    const other = await liveRecordOf(owner, tabId);
    if (other) throw new CommandError("in_use", `owner ${owner} already has tab ${other.rec.tabId}`);
    await session.set({ [recKey(tabId)]: { owner, tabId, windowId: tab.windowId, createdWindow: false, kind: KIND_BOUND } });
    return { tabId, windowId: tab.windowId };
  }

  /** release: drops owner's record of the tab and leaves the tab open. Idempotent. */
  async function release(args) {
    const owner = requireOwner(args);
    const tabId = requireId(args.tabId, "tabId");
    const rec = await getOne(session, recKey(tabId));
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
    const tab = await lookupTab(rec.tabId);
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
      await chrome.tabs.remove(rec.tabId);
    } catch (e) {
      // Gone between get and remove, or refused ("Tabs cannot be edited right now (user may
      // be dragging a tab)"): only a second look tells. A tab still open stays recorded.
      if (await lookupTab(rec.tabId)) {
        throw new CommandError("failed", `tab ${rec.tabId} could not be closed (${e?.message ?? e}); it is still open and still recorded, retry`);
      }
      closed = false;
    }
    await session.remove(recKey(rec.tabId));
    return closed;
  }

  async function closeOwned(owner, tabId) {
    const rec = await getOne(session, recKey(tabId));
    // Idempotent: a close retried after it succeeded (the host acted on a stale view, or lost
    // our reply) finds neither the record (dropped by the first close) nor the tab. Nothing can
    // be closed and nothing is refused; tab ids are never reused, so the id cannot name a tab
    // that belongs to someone else.
    if (!rec && !(await tryGetTab(tabId))) return { closed: false };
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
    const mine = (await allWithPrefix("rec:"))
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

  async function records() {
    const recs = (await allWithPrefix("rec:")).sort((a, b) => a.tabId - b.tabId);
    return { records: recs.map(recordShape) };
  }

  async function storeSessions(args) {
    await session.set({ sessions: sanitizeSessions(args?.sessions), sessionsAt: now() });
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
    const matches = (await allWithPrefix("pending:")).filter(
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

  function onTabCreated(tab) {
    const seenAt = now(); // when Chrome reported it, not when the queue gets to it
    serial(async () => {
      if (!Number.isInteger(tab?.id)) return;
      const own = ownTabs.delete(tab.id); // the last-tab rule's blank tab
      let owner = (await getOne(session, recKey(tab.id)))?.owner;
      // A tab an acted-on page announced (Page.windowOpen): its true opener is that page,
      // whatever tab Chrome names (the window's active one); opened noopener, it is the act's.
      const announced = !owner && !own ? actor.claimOpen(seenAt, normalizeUrl(tab.pendingUrl || tab.url || "")) : undefined;
      let opener = tab.openerTabId;
      let attributed;
      if (announced) {
        opener = announced.noopener ? undefined : announced.sourceTabId;
        if (announced.noopener) attributed = announced.key;
      }
      // The opener as seen now, at creation: adopt trusts this one, since Chrome may drop
      // openerTabId from later reports of the tab.
      if (Number.isInteger(opener)) await session.set({ [openerKey(tab.id)]: opener });
      if (!isReportableTab(tab)) return;
      if (!owner) owner = await claimFromPending(tab);
      // A tab without an opener that appears while an act runs (or just after) is that act's
      // doing (a rel=noopener link, a download viewer): attributed to its key, which may adopt
      // it. Not tabs this worker made itself (open's are recorded by now).
      if (!owner && !own && !attributed && !Number.isInteger(opener)) attributed = await actor.attributionAt(seenAt, tab.windowId);
      if (!owner && attributed) await session.set({ [attrKey(tab.id)]: attributed });
      const shape = tabShape({ ...tab, openerTabId: attributed ? undefined : opener }, owner ? undefined : attributed);
      sendEvent("tabCreated", owner ? { tab: shape, owner } : { tab: shape });
    }).catch((e) => log.warn("tabwarden: tabCreated:", e?.message));
  }

  /** A tab as reported: the opener seen at creation and the act attribution win over Chrome's later view. */
  async function reportedShape(tab) {
    const [remembered, attributed] = await Promise.all([getOne(session, openerKey(tab.id)), getOne(session, attrKey(tab.id))]);
    const opener = attributed ? undefined : Number.isInteger(remembered) ? remembered : tab.openerTabId;
    return tabShape({ ...tab, openerTabId: opener }, attributed);
  }

  function onTabUpdated(tabId, changeInfo, tab) {
    if (!("url" in changeInfo || "title" in changeInfo || "status" in changeInfo)) return;
    serial(async () => {
      if (isReportableTab(tab)) sendEvent("tabUpdated", { tab: await reportedShape(tab) });
    }).catch((e) => log.warn("tabwarden: tabUpdated:", e?.message));
  }

  function onTabRemoved(tabId, removeInfo) {
    // The record is kept on purpose: a later close/cleanup answers closed:false and drops it,
    // instead of not_owned, which would read as a refusal. Tab ids are never reused.
    serial(async () => {
      actor.forgetTab(tabId);
      await session.remove([openerKey(tabId), attrKey(tabId)]);
      sendEvent("tabRemoved", { tabId, windowId: removeInfo?.windowId });
    }).catch((e) => log.warn("tabwarden: tabRemoved:", e?.message));
  }

  function onWindowCreated(win) {
    serial(async () => {
      if (!isReportableWindow(win)) return;
      // Remember which tab a window was born with, so adopt can tell a spawned popup window
      // (closeable with its tab) from a user window (kept alive by the last-tab rule).
      const first = await chrome.tabs.query({ windowId: win.id });
      if (first.length === 1) await session.set({ [bornKey(win.id)]: { firstTabId: first[0].id } });
      sendEvent("windowCreated", { window: windowShape(win) });
    }).catch((e) => log.warn("tabwarden: windowCreated:", e?.message));
  }

  function onWindowRemoved(windowId) {
    serial(async () => {
      await session.remove(bornKey(windowId));
      sendEvent("windowRemoved", { windowId });
    }).catch((e) => log.warn("tabwarden: windowRemoved:", e?.message));
  }

  // ---- pairing and popup messages --------------------------------------------------------------

  async function pair(code, port) {
    code = typeof code === "string" ? code.trim() : "";
    if (!/^[A-Za-z0-9-]{1,64}$/.test(code)) return { ok: false, error: "enter the code printed by `tabwarden pair`" };
    if (port === undefined || port === null || port === "") port = DEFAULT_PORT;
    port = Number(port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, error: "port must be 1-65535" };

    let resp;
    try {
      resp = await fetchImpl(`http://127.0.0.1:${port}/v1/pair`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code }),
      });
    } catch (e) {
      const error = `cannot reach the tabwarden agent on 127.0.0.1:${port} (${e?.message ?? e})`;
      await setConn({ lastError: error });
      return { ok: false, error };
    }
    if (!resp.ok) {
      const retry = resp.headers?.get?.("Retry-After");
      // The host explains a burned code ("run `tabwarden pair` again"); show its words.
      let said = "";
      try {
        const body = await resp.json();
        if (typeof body?.message === "string") said = clip(body.message, 300);
      } catch {
        /* no JSON body */
      }
      const error =
        resp.status === 429
          ? `too many attempts; retry in ${retry ?? "a few"} seconds`
          : `pairing refused (HTTP ${resp.status}${said ? `: ${said}` : ""}); run \`tabwarden pair\` for a fresh code`;
      await setConn({ lastError: error });
      return { ok: false, error };
    }
    let token;
    try {
      token = (await resp.json())?.token;
    } catch {
      /* fall through */
    }
    if (typeof token !== "string" || token === "") {
      const error = "the agent answered without a token";
      await setConn({ lastError: error });
      return { ok: false, error };
    }
    // Only the derived key is kept; the token itself is forgotten right here.
    const key = b64url(await deriveKey(token, cryptoImpl));
    token = null;
    await local.set({ key, port, pairedAt: now() });
    await local.remove("token");
    // A new key replaces the old connection, whatever state it was in. A dial already in
    // flight read the old key: let it finish, then replace its socket.
    if (connecting) await connecting;
    closeSocket();
    if (retryTimer !== null) clearTimer(retryTimer);
    retryTimer = null;
    await setConn({ state: "connecting", epoch: null, lastError: null, attempt: 0, nextRetryAt: null, port });
    await ensureConnected();
    return { ok: true };
  }

  /**
   * The popup's Forget button: tell the host to forget this pairing (when connected, on the
   * authenticated socket), close the socket, and drop the key. Pairing again is the way back.
   */
  async function forget() {
    if (connecting) await connecting;
    const sock = ws;
    const hostTold = sendOn(sock, { type: "forget" });
    closeSocket(1000, "pairing forgotten");
    if (retryTimer !== null) clearTimer(retryTimer);
    retryTimer = null;
    await local.remove(["key", "token", "pairedAt"]);
    await setConn({ state: "unpaired", epoch: null, lastError: null, attempt: 0, nextRetryAt: null });
    return { ok: true, hostTold };
  }

  // Only our own pages (the popup, also when it is opened as a tab at
  // chrome-extension://<id>/popup.html) talk to the worker. The extension has no content
  // scripts; if it ever gets some, their sender.url is the web page's, so they stay out.
  function fromOwnPage(sender) {
    if (sender?.id !== chrome.runtime.id || typeof sender?.url !== "string") return false;
    return sender.url.startsWith(`chrome-extension://${chrome.runtime.id}/`);
  }

  function onMessage(msg, sender, sendResponse) {
    if (!fromOwnPage(sender)) return false;
    switch (msg?.type) {
      case "pair":
        pair(msg.code, msg.port).then(sendResponse, (e) => sendResponse({ ok: false, error: String(e?.message ?? e) }));
        return true; // respond asynchronously
      case "forget":
        forget().then(sendResponse, (e) => sendResponse({ ok: false, error: String(e?.message ?? e) }));
        return true;
      case "reconnect":
        setConn({ state: "connecting", attempt: 0 })
          .then(() => {
            if (retryTimer !== null) clearTimer(retryTimer);
            retryTimer = null;
            return ensureConnected();
          })
          .then(() => sendResponse({ ok: true }));
        return true;
      default:
        return false;
    }
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  /** Adds every listener. Call synchronously during the worker's first turn. */
  function register() {
    chrome.tabs.onCreated.addListener(onTabCreated);
    chrome.tabs.onUpdated.addListener(onTabUpdated);
    chrome.tabs.onRemoved.addListener(onTabRemoved);
    chrome.windows.onCreated.addListener(onWindowCreated);
    chrome.windows.onRemoved.addListener(onWindowRemoved);
    chrome.runtime.onMessage.addListener(onMessage);
    chrome.debugger?.onEvent?.addListener(actor.onDebuggerEvent);
    chrome.runtime.onStartup.addListener(() => start());
    chrome.runtime.onInstalled.addListener(() => start());
    chrome.alarms.onAlarm.addListener((alarm) => {
      if (alarm?.name === ALARM_NAME) ensureConnected();
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
      const stale = (await allWithPrefix("pending:")).filter((m) => !(t - m.at < PENDING_TTL_MS));
      if (stale.length) await session.remove(stale.map((m) => pendingKey(m.owner)));
      await actor.expireMarkers();
    } catch (e) {
      log.warn("tabwarden: start:", e?.message);
    }
    await ensureConnected();
  }

  return {
    register,
    start,
    execute,
    pair,
    ensureConnected,
    forget,
    /** Resolves once everything queued so far has run (tests). */
    idle: () => queue.then(() => hsChain).then(() => connChain),
    /** The live socket, if any (tests and debugging). */
    get socket() {
      return ws;
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
