// The worker's shared vocabulary, pure: timings, the storage layout and record kinds, the
// filters and wire shapes of what is reported (docs/extension-protocol.md "Shapes"), the
// command refusal, and the validation of command arguments.

export const DEFAULT_PORT = 47321;
export const PING_INTERVAL_MS = 20_000;
export const BACKOFF_MIN_MS = 1_000;
export const BACKOFF_MAX_MS = 30_000;
// Periodic safety-net alarm: wakes a terminated worker so it reconnects even if every
// setTimeout died with the previous worker. 30 s is Chrome's minimum alarm period.
export const ALARM_NAME = "tabwarden-keepalive";
export const ALARM_PERIOD_MINUTES = 0.5;
// A pending-open marker older than this is stale (its open died with a worker) and must not
// claim a tab the user creates later.
export const PENDING_TTL_MS = 60_000;
// A host that has not completed the handshake within this long is dropped (and retried with
// backoff): a squatter that just holds the socket open cannot keep the extension waiting.
export const HANDSHAKE_TIMEOUT_MS = 10_000;
// Frames are capped at 1 MiB by the host; keep individual strings bounded so one huge data:
// URL cannot push an observe snapshot over the limit.
export const MAX_URL_CHARS = 8192;
export const MAX_TITLE_CHARS = 1024;

// Pages that are never reported (docs/extension-protocol.md, "Shapes").
export const HIDDEN_URL_PREFIXES = [
  "chrome://",
  "chrome-extension://",
  "devtools://",
  "chrome-untrusted://",
  "edge://",
  "view-source:",
];
export const WINDOW_TYPES = new Set(["normal", "popup", "app", "panel"]);

// Storage layout. storage.session: rec:<tabId>, pending:<owner>, born:<windowId>, closedBy,
// opener:<tabId>, attr:<tabId> (the act key an opener-less tab is attributed to), act:<key>
// (act.js: an act's window of attribution), conn, sessions. storage.local: key (the pairing key, base64url), port, and
// pairedAt, so the popup never reads the key. (An older build stored the raw token as `token`;
// it is turned into the key and dropped on the next connect.)
export const recKey = (tabId) => `rec:${tabId}`;
export const pendingKey = (owner) => `pending:${owner}`;
export const bornKey = (windowId) => `born:${windowId}`;
export const openerKey = (tabId) => `opener:${tabId}`;
export const attrKey = (tabId) => `attr:${tabId}`;
// closedBy: the owners of the owned tabs closed lately ([[tabId, owner], ...], the last
// CLOSED_KEEP of them): a tab such a tab spawned just before it closed is still its owner's to
// adopt (ownership.js adopt), though its record is gone.
export const CLOSED_BY_KEY = "closedBy";
export const CLOSED_KEEP = 1024;

// Record kinds (docs/extension-protocol.md "Ownership"): opened and spawned tabs are owned
// (closeable by their owner); a bound tab is only used, never closed.
export const KIND_OPENED = "opened";
export const KIND_SPAWNED = "spawned";
export const KIND_BOUND = "bound";
export const OWNED_KINDS = new Set([KIND_OPENED, KIND_SPAWNED]);

/** The kind of a stored record; records of an older build carry `via` instead. */
export function kindOf(rec) {
  if (rec?.kind) return rec.kind;
  return rec?.via === "adopt" ? KIND_SPAWNED : KIND_OPENED;
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

export function isHiddenUrl(url) {
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

export function clip(s, n) {
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
export function recordShape(rec) {
  const out = { owner: rec.owner, tabId: rec.tabId, windowId: rec.windowId, createdWindow: !!rec.createdWindow, kind: kindOf(rec) };
  if (out.kind === KIND_SPAWNED && typeof rec.parent === "string" && rec.parent !== "") out.parent = rec.parent;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Argument validation (pure).

export function requireOwner(args) {
  const owner = args?.owner;
  if (typeof owner !== "string" || owner === "") {
    throw new CommandError("owner_required", "an owner is required; tabwarden closes only what an owner created");
  }
  return owner;
}

export function requireParent(args) {
  const parent = args?.parent;
  if (typeof parent !== "string" || parent === "") {
    throw new CommandError("invalid_args", "adopt needs the parent: the owner of the page that spawned the tab");
  }
  return parent;
}

// Chrome ids are integers on the wire; tolerate decimal strings (the Go side's representation).
export function requireId(value, name) {
  if (Number.isInteger(value)) return value;
  if (typeof value === "string" && /^\d{1,15}$/.test(value)) return Number(value);
  throw new CommandError("invalid_args", `${name} must be an integer id`);
}

// open navigates somewhere the agent can see and the user can inspect: http(s) or a blank page.
// javascript:, data:, file: and browser-internal urls are refused (no evaluation across the seam).
export function requireOpenUrl(url) {
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

export function normalizeUrl(url) {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}

export function str(v, n = 512) {
  return typeof v === "string" ? clip(v, n) : v == null ? "" : clip(String(v), n);
}

// The popup's Session Monitor data: keep only known fields, bounded, as strings.
export function sanitizeSessions(list) {
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
      phase: str(w?.phase),
      ...(typeof w?.unacknowledged === "boolean" ? { unacknowledged: w.unacknowledged } : {}),
    })),
  }));
}
