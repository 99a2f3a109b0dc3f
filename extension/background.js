// tabwarden MV3 service worker.
//
// The agent's `extension` driver is a loopback server (the *host*); this worker is its only
// client. The wire contract is docs/extension-protocol.md. In short:
//
//   * report tabs and windows (filtered: never incognito, never browser-internal pages),
//   * run a small set of curated commands (observe, open, adopt, close, cleanup, records,
//     sessions): no evaluation, no CDP,
//   * remember which tabs it created for which owner in chrome.storage.session, so cleanup
//     still works after Chrome suspends and restarts this worker,
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

// Storage layout. storage.session: rec:<tabId>, pending:<owner>, born:<windowId>, conn,
// sessions. storage.local: token, port (and pairedAt, so the popup never reads the token).
const recKey = (tabId) => `rec:${tabId}`;
const pendingKey = (owner) => `pending:${owner}`;
const bornKey = (windowId) => `born:${windowId}`;

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

/** Tab = {id, windowId, openerTabId?, url, title, active, index} */
export function tabShape(tab) {
  const out = {
    id: tab.id,
    windowId: tab.windowId,
    url: clip(tab.url || tab.pendingUrl || "", MAX_URL_CHARS),
    title: clip(tab.title, MAX_TITLE_CHARS),
    active: !!tab.active,
    index: tab.index ?? 0,
  };
  if (Number.isInteger(tab.openerTabId)) out.openerTabId = tab.openerTabId;
  return out;
}

/** Window = {id, type, focused} */
export function windowShape(win) {
  return { id: win.id, type: win.type ?? "normal", focused: !!win.focused };
}

/** Record = {owner, tabId, windowId, createdWindow}; internal fields are not sent. */
function recordShape(rec) {
  return { owner: rec.owner, tabId: rec.tabId, windowId: rec.windowId, createdWindow: !!rec.createdWindow };
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

  const session = chrome.storage.session;
  const local = chrome.storage.local;

  // Process handles only; see the header comment.
  let ws = null; // the live WebSocket, if any
  let welcomed = null; // the socket the host has welcomed (events and results go only there)
  let connecting = null; // promise while a connect attempt reads storage and dials
  let pingTimer = null;
  let retryTimer = null;
  let queue = Promise.resolve(); // tail of the ownership queue
  let connChain = Promise.resolve(); // orders writes of the "conn" status record

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
    if (!ws || ws !== welcomed || ws.readyState !== 1 /* OPEN */) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  function sendEvent(event, body) {
    send({ type: "event", event, ...body });
  }

  function stopPing() {
    if (pingTimer !== null) clearTimer(pingTimer);
    pingTimer = null;
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

  /**
   * Dials the host if paired and not already connected or dialing. Safe to call from any
   * trigger (start, alarm, retry timer, onStartup); concurrent calls share one attempt.
   */
  function ensureConnected() {
    if (ws || connecting) return connecting ?? Promise.resolve();
    connecting = (async () => {
      try {
        const { token, port } = await local.get(["token", "port"]);
        const conn = (await getOne(session, "conn")) ?? {};
        if (!token) {
          await setConn({ state: "unpaired" });
          return;
        }
        // 4401: the host does not know this token (revoked by a newer pairing). Retrying would
        // only hammer it; wait for the user to pair again.
        if (conn.state === "unauthorized") return;
        if (ws) return;
        if (retryTimer !== null) {
          clearTimer(retryTimer);
          retryTimer = null;
        }
        dial(token, Number.isInteger(port) ? port : DEFAULT_PORT);
      } catch (e) {
        log.warn("tabwarden: connect failed:", e?.message);
      } finally {
        connecting = null;
      }
    })();
    return connecting;
  }

  function dial(token, port) {
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
    setConn({ state: "connecting", port });

    sock.onopen = () => {
      if (ws !== sock) return;
      const version = chrome.runtime.getManifest?.().version ?? "0";
      // The token is sent only here, inside the socket, and never logged.
      sock.send(JSON.stringify({ type: "hello", token, version }));
    };
    sock.onmessage = (ev) => {
      if (ws !== sock) return;
      onFrame(sock, ev.data);
    };
    sock.onerror = () => {
      // A close event always follows; it carries the useful information.
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return; // an old socket we replaced on purpose
      ws = null;
      stopPing();
      const code = ev?.code ?? 1006;
      if (code === 4401) {
        setConn({ state: "unauthorized", epoch: null, lastError: "host refused the token (4401): pair again" });
        return;
      }
      const why = code === 4409 ? "another connection is active (4409)" : `closed (${code}${ev?.reason ? ` ${ev.reason}` : ""})`;
      setConn({ state: "disconnected", epoch: null, lastError: why });
      scheduleReconnect();
    };
  }

  function onFrame(sock, data) {
    let msg;
    try {
      msg = JSON.parse(typeof data === "string" ? data : String(data));
    } catch {
      return; // not ours to guess at
    }
    switch (msg?.type) {
      case "welcome":
        welcomed = sock;
        setConn({ state: "connected", epoch: msg.epoch ?? null, lastError: null, attempt: 0, nextRetryAt: null, connectedAt: now() });
        schedulePing();
        return;
      case "pong":
        return;
      case "command":
        if (typeof msg.id !== "string") return; // cannot reply without an id
        execute(msg).then((reply) => send(reply));
        return;
      default:
        return;
    }
  }

  function closeSocket() {
    const sock = ws;
    ws = null; // detach first so its close event is ignored
    stopPing();
    if (sock) {
      try {
        sock.close(1000, "re-pairing");
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
      if (e instanceof CommandError) {
        return { type: "result", id, ok: false, error: { reason: e.reason, message: e.message } };
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
      default:
        return Promise.reject(new CommandError("unknown_op", `unknown op ${JSON.stringify(op)}`));
    }
  }

  async function observe() {
    const wins = await chrome.windows.getAll({ populate: true });
    const windows = [];
    const tabs = [];
    for (const w of wins) {
      if (!isReportableWindow(w)) continue;
      windows.push(windowShape(w));
      for (const t of w.tabs ?? []) if (isReportableTab(t)) tabs.push(tabShape(t));
    }
    return { windows, tabs };
  }

  async function tryGetTab(tabId) {
    try {
      return await chrome.tabs.get(tabId);
    } catch {
      return null; // "No tab with id"
    }
  }

  async function open(args) {
    const owner = requireOwner(args);
    const url = requireOpenUrl(args.url);
    const newWindow = args.newWindow === true;
    const windowId = newWindow ? null : requireId(args.windowId, "windowId");

    // Idempotent by owner: a retried open (the host lost our reply, or the worker restarted)
    // returns the tab it already has. Records made by open win over adopted ones.
    const mine = (await allWithPrefix("rec:"))
      .filter((r) => r.owner === owner)
      .sort((a, b) => (a.via === "open" ? 0 : 1) - (b.via === "open" ? 0 : 1) || a.tabId - b.tabId);
    for (const rec of mine) {
      const tab = await tryGetTab(rec.tabId);
      if (tab) return { tabId: tab.id, windowId: tab.windowId, createdWindow: !!rec.createdWindow };
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
    await session.set({ [pendingKey(owner)]: { owner, url, windowId, newWindow, at: now() } });
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
        [recKey(tab.id)]: { owner, tabId: tab.id, windowId: tab.windowId, createdWindow: newWindow, via: "open" },
      });
      return { tabId: tab.id, windowId: tab.windowId, createdWindow: newWindow };
    } finally {
      await session.remove(pendingKey(owner));
    }
  }

  async function adopt(args) {
    const owner = requireOwner(args);
    const tabId = requireId(args.tabId, "tabId");
    const tab = await tryGetTab(tabId);
    if (!tab || !isReportableTab(tab)) throw new CommandError("not_found", `tab ${tabId} not found`);
    const existing = await getOne(session, recKey(tabId));
    if (existing && existing.owner !== owner) {
      throw new CommandError("not_owned", `tab ${tabId} is recorded under another owner`);
    }
    if (!existing) {
      // A spawn that came with its own window (a compose popup, a window.open with features)
      // may take that window with it on cleanup. Otherwise the last-tab rule applies: we never
      // guess that a window the user might be using belongs to the agent.
      const born = await getOne(session, bornKey(tab.windowId));
      const siblings = await chrome.tabs.query({ windowId: tab.windowId });
      const createdWindow = born?.firstTabId === tab.id && siblings.length === 1;
      await session.set({
        [recKey(tabId)]: { owner, tabId, windowId: tab.windowId, createdWindow, via: "adopt" },
      });
    }
    return { tabId, windowId: tab.windowId };
  }

  /**
   * Closes one recorded tab, keeping its window alive unless the window was created for this
   * owner. Must run inside the queue. Returns whether a tab was removed.
   */
  async function closeRecorded(rec) {
    const tab = await tryGetTab(rec.tabId);
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
        await chrome.tabs.create({ windowId: tab.windowId, url: "about:blank", active: false });
      }
    }
    let closed = true;
    try {
      await chrome.tabs.remove(rec.tabId);
    } catch {
      closed = false; // vanished between get and remove
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
    return { closed: await closeRecorded(rec) };
  }

  async function cleanup(owner) {
    const mine = (await allWithPrefix("rec:")).filter((r) => r.owner === owner).sort((a, b) => a.tabId - b.tabId);
    const closed = [];
    for (const rec of mine) if (await closeRecorded(rec)) closed.push(rec.tabId);
    await session.remove(pendingKey(owner));
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
  // written before tabs.create names the owner. Only an unambiguous, fresh match claims it.
  async function claimFromPending(tab) {
    const url = normalizeUrl(tab.pendingUrl || tab.url || "");
    const t = now();
    const matches = (await allWithPrefix("pending:")).filter(
      (m) => t - m.at < PENDING_TTL_MS && m.url === url && (m.newWindow || m.windowId === tab.windowId),
    );
    if (matches.length !== 1) return undefined;
    const m = matches[0];
    await session.set({
      [recKey(tab.id)]: { owner: m.owner, tabId: tab.id, windowId: tab.windowId, createdWindow: !!m.newWindow, via: "open" },
    });
    await session.remove(pendingKey(m.owner));
    return m.owner;
  }

  function onTabCreated(tab) {
    serial(async () => {
      if (!isReportableTab(tab)) return;
      let owner = (await getOne(session, recKey(tab.id)))?.owner;
      if (!owner) owner = await claimFromPending(tab);
      sendEvent("tabCreated", owner ? { tab: tabShape(tab), owner } : { tab: tabShape(tab) });
    }).catch((e) => log.warn("tabwarden: tabCreated:", e?.message));
  }

  function onTabUpdated(tabId, changeInfo, tab) {
    if (!("url" in changeInfo || "title" in changeInfo || "status" in changeInfo)) return;
    serial(async () => {
      if (isReportableTab(tab)) sendEvent("tabUpdated", { tab: tabShape(tab) });
    }).catch((e) => log.warn("tabwarden: tabUpdated:", e?.message));
  }

  function onTabRemoved(tabId, removeInfo) {
    // The record is kept on purpose: a later close/cleanup answers closed:false and drops it,
    // instead of not_owned, which would read as a refusal. Tab ids are never reused.
    serial(async () => {
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
      const error =
        resp.status === 429
          ? `too many attempts; retry in ${retry ?? "a few"} seconds`
          : `pairing refused (HTTP ${resp.status}); run \`tabwarden pair\` for a fresh code`;
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
    await local.set({ token, port, pairedAt: now() });
    // A new token replaces the old connection, whatever state it was in. A dial already in
    // flight read the old token: let it finish, then replace its socket.
    if (connecting) await connecting;
    closeSocket();
    if (retryTimer !== null) clearTimer(retryTimer);
    retryTimer = null;
    await setConn({ state: "connecting", epoch: null, lastError: null, attempt: 0, nextRetryAt: null, port });
    await ensureConnected();
    return { ok: true };
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
    /** Resolves once everything queued so far has run (tests). */
    idle: () => queue.then(() => connChain),
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
