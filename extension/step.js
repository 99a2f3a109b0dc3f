// The step as tabwarden's host sends it, checked on the worker side before an act is queued:
// its kinds, types, bounds and urls (validateStep), the target shapes page.js takes, the keys
// (parseKey, held to internal/browser/keys' table by keys.test.mjs), and the bounded shapes of
// what goes back to the host (observation, element, pageRefusal). Nothing here touches a tab.
export const DEFAULT_MAX_ELEMENTS = 200;
export const MAX_ELEMENTS = 1000;
export const MAX_TEXT_CHARS = 10_000;
export const MAX_WAIT_MS = 120_000;
export const DEFAULT_WAIT_MS = 10_000;
const MAX_URL_CHARS = 8192;
const MAX_NAME_CHARS = 512;
export const MAX_CANDIDATES = 20;
// The outline chunk page.js is asked for (bytes of its lines, about) and the bounds of what goes back.
export const OUTLINE_BYTES = 32768;
export const MAX_OUTLINE_OFFSET = 1_000_000;
const MAX_OUTLINE_NODES = 5000;
const MAX_OUTLINE_TEXT = 4096; // characters; page.js sends at most 1000 per node
export const MAX_FILL_FIELDS = 20;
export const STEP_KINDS = new Set(["observe", "navigate", "click", "type", "press", "scroll", "wait", "back", "forward", "reload", "hover", "select", "fill",
  "screenshot", "dialog", "upload"]);
// An upload's files: at most this many, and this many bytes together (the API's bounds;
// the data arrives in base64).
export const MAX_UPLOAD_FILES = 10;
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024;
// A screenshot's image is answered only up to this many bytes (the agent's bound; its base64
// fits the host's 2 MiB frame); a larger one is answered with its size and no data.
export const MAX_SHOT_BYTES = 768 * 1024;
export const SHOT_FORMATS = new Set(["png", "jpeg"]);
// The reasons a page refusal may carry (browser.ActError); anything else from page.js is a bug.
export const GUARD_REASONS = new Set(["stale_ref", "stale_coordinates", "ambiguous_target", "target_not_found", "no_history",
  "page_not_visible"]);


/** A refusal carrying a reason, a message and (for ambiguous targets) the candidates. */
export class ActRefusal extends Error {
  constructor(reason, message, candidates, document, epoch) {
    super(message);
    this.reason = reason;
    this.candidates = candidates;
    // With candidates: the page's document and epoch they are refs of.
    this.document = document;
    this.epoch = epoch;
  }
}

// ---- the step: validation and targeting (worker side) --------------------------------------

export const invalid = (message) => new ActRefusal("invalid_args", message);

export function clip(s, n) {
  s = typeof s === "string" ? s : "";
  return s.length > n ? s.slice(0, n) : s;
}

function int(v, name, { min = -1e7, max = 1e7 } = {}) {
  if (v === undefined || v === null) return 0;
  if (!Number.isInteger(v) || v < min || v > max) throw invalid(`step.${name} must be an integer in [${min}, ${max}]`);
  return v;
}

function num(v, name) {
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isFinite(v) || Math.abs(v) > 1e6) throw invalid(`step.${name} must be a finite number`);
  return v;
}

export function text(v, name, n = MAX_TEXT_CHARS) {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw invalid(`step.${name} must be a string`);
  if (v.length > n) throw invalid(`step.${name} is longer than ${n} characters`);
  return v;
}

/** The navigate url: http(s) or about:blank; javascript:, data:, file: and internal urls never. */
function navigateUrl(url) {
  if (url === "about:blank") return url;
  let u;
  try {
    u = new URL(url);
  } catch {
    throw invalid("step.url must be an absolute http(s) url or about:blank");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw invalid(`step.url scheme ${u.protocol} is not allowed; use http(s) or about:blank`);
  }
  return u.href;
}

/**
 * Targeting, worker side: the target as page.js takes it, only known fields, typed and
 * bounded, exactly one of ref, text, selector and point. (Resolving it is page.js's.)
 */
export function target(t) {
  if (t === undefined || t === null) return null;
  if (typeof t !== "object" || Array.isArray(t)) throw invalid("step.target must be an object");
  const out = {
    ref: text(t.ref, "target.ref", 64),
    document: text(t.document, "target.document", 128),
    text: text(t.text, "target.text", 1024),
    selector: text(t.selector, "target.selector", 1024),
    point: t.point === true,
    x: num(t.x, "target.x"),
    y: num(t.y, "target.y"),
    epoch: int(t.epoch, "target.epoch", { min: 0, max: Number.MAX_SAFE_INTEGER }),
  };
  const kinds = [out.ref !== "", out.text !== "", out.selector !== "", out.point].filter(Boolean).length;
  if (kinds === 0) return null;
  if (kinds > 1) throw invalid("step.target names more than one of ref, text, selector and point; give exactly one");
  if ((out.ref !== "" || out.point) && out.document === "") {
    throw invalid("a ref or point target needs target.document from the observation it came from");
  }
  // page.js's shapes: {ref, document} | {text} | {selector} | {point, x, y, document, epoch}
  if (out.ref) return { ref: out.ref, document: out.document };
  if (out.text) return { text: out.text };
  if (out.selector) return { selector: out.selector };
  return { point: true, x: out.x, y: out.y, document: out.document, epoch: out.epoch };
}

/** Validates the host's step; returns a normalized copy with only known fields. */
export function validateStep(step) {
  if (!step || typeof step !== "object" || Array.isArray(step)) throw invalid("step must be an object");
  const kind = step.kind;
  if (!STEP_KINDS.has(kind)) throw invalid(`step.kind must be one of ${[...STEP_KINDS].join(", ")}`);
  const s = { kind };
  switch (kind) {
    case "observe":
      s.maxElements = int(step.maxElements, "maxElements", { min: 0, max: MAX_ELEMENTS }) || DEFAULT_MAX_ELEMENTS;
      s.outlineOffset = int(step.outlineOffset, "outlineOffset", { min: 0, max: MAX_OUTLINE_OFFSET });
      break;
    case "navigate":
      s.url = navigateUrl(text(step.url, "url", MAX_URL_CHARS));
      break;
    case "click":
    case "hover":
      s.target = target(step.target);
      if (!s.target) throw invalid(`${kind} needs a target: a ref (with its document), a text, a selector, or a point`);
      break;
    case "select":
      s.target = target(step.target);
      if (!s.target) throw invalid("select needs a target (the drop-down): a ref (with its document), a text, a selector, or a point");
      s.text = text(step.text, "text", 1024);
      if (s.text === "") throw invalid("select needs text: the option's label or value");
      break;
    case "upload": {
      s.target = target(step.target);
      if (!s.target) throw invalid("upload needs a target (the file input, or its label): a ref (with its document), a text, a selector, or a point");
      if (!Array.isArray(step.files) || step.files.length === 0) throw invalid("upload needs files: a list of {name, type, lastModified, data (base64)}");
      if (step.files.length > MAX_UPLOAD_FILES) throw invalid(`upload takes at most ${MAX_UPLOAD_FILES} files`);
      let total = 0;
      s.files = step.files.map((f, i) => {
        if (!f || typeof f !== "object" || Array.isArray(f)) throw invalid(`files[${i}] must be an object {name, type, lastModified, data}`);
        const name = text(f.name, `files[${i}].name`, 255);
        if (name === "" || /[\\/]/.test(name)) throw invalid(`files[${i}].name must be a base name (no path)`);
        const type = text(f.type, `files[${i}].type`, 255);
        const lastModified = int(f.lastModified, `files[${i}].lastModified`, { min: 0, max: 8.64e15 });
        if (typeof f.data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(f.data)) throw invalid(`files[${i}].data must be base64`);
        total += Math.floor(f.data.length * 3 / 4);
        if (total > MAX_UPLOAD_BYTES + 2) throw invalid(`an upload's files are at most ${MAX_UPLOAD_BYTES} bytes together`);
        return { name, type, lastModified, data: f.data };
      });
      break;
    }
    case "fill": {
      if (!Array.isArray(step.fields) || step.fields.length === 0) throw invalid("fill needs fields: a list of {target, text}");
      if (step.fields.length > MAX_FILL_FIELDS) throw invalid(`fill takes at most ${MAX_FILL_FIELDS} fields`);
      s.fields = step.fields.map((f, i) => {
        if (!f || typeof f !== "object" || Array.isArray(f)) throw invalid(`fields[${i}] must be an object {target, text}`);
        const t = target(f.target);
        if (!t) throw invalid(`fields[${i}] needs a target: a ref (with its document), a text, a selector, or a point`);
        const x = text(f.text, `fields[${i}].text`);
        if (x === "") throw invalid(`fields[${i}] needs text`);
        return { target: t, text: x };
      });
      break;
    }
    case "type":
      s.target = target(step.target); // none: the focused element
      s.text = text(step.text, "text");
      if (s.text === "") throw invalid("type needs text");
      break;
    case "press":
      s.key = parseKey(text(step.key, "key", 64));
      break;
    case "scroll":
      s.dx = int(step.deltaX, "deltaX", { min: -100_000, max: 100_000 });
      s.dy = int(step.deltaY, "deltaY", { min: -100_000, max: 100_000 });
      if (s.dx === 0 && s.dy === 0) throw invalid("scroll needs deltaX or deltaY");
      break;
    case "screenshot": {
      s.target = target(step.target); // none: the viewport
      s.format = step.format === undefined ? "png" : step.format;
      if (!SHOT_FORMATS.has(s.format)) throw invalid("step.format of a screenshot is png or jpeg");
      s.quality = int(step.quality, "quality", { min: 0, max: 100 });
      const scale = step.scale === undefined || step.scale === null || step.scale === 0 ? 1 : step.scale;
      if (typeof scale !== "number" || !(scale > 0 && scale <= 1)) throw invalid("step.scale of a screenshot is in (0, 1]");
      s.scale = scale;
      s.maxBytes = Math.min(int(step.maxBytes, "maxBytes", { min: 0, max: MAX_SHOT_BYTES }) || MAX_SHOT_BYTES, MAX_SHOT_BYTES);
      break;
    }
    case "back":
    case "forward":
    case "reload":
      break; // no fields: the tab's own history
    case "dialog":
      if (typeof step.accept !== "boolean") throw invalid("dialog needs accept: true (OK) or false (Cancel)");
      s.accept = step.accept;
      s.text = text(step.text, "text");
      if (s.text !== "" && !s.accept) throw invalid("a dialog step's text answers a prompt, so it goes with accept: true only");
      break;
    case "wait":
      s.text = text(step.text, "text", 1024);
      s.timeoutMs = int(step.timeoutMs, "timeoutMs", { min: 0, max: MAX_WAIT_MS }) || (s.text ? DEFAULT_WAIT_MS : 0);
      if (!s.text && s.timeoutMs === 0) throw invalid("wait needs text to wait for, or timeoutMs to sleep");
      break;
  }
  return s;
}

// ---- keys ------------------------------------------------------------------------------------

// One reading of a key, the same as internal/browser/keys (the agent's focus guard
// and the other drivers): extension/test/keys.test.mjs checks it against the shared
// table internal/browser/keys/testdata/keys.json.
const NAMED_KEYS = {
  Enter: { code: "Enter", keyCode: 13, text: "\r" },
  Tab: { code: "Tab", keyCode: 9 },
  Escape: { code: "Escape", keyCode: 27 },
  Backspace: { code: "Backspace", keyCode: 8 },
  Delete: { code: "Delete", keyCode: 46 },
  ArrowUp: { code: "ArrowUp", keyCode: 38 },
  ArrowDown: { code: "ArrowDown", keyCode: 40 },
  ArrowLeft: { code: "ArrowLeft", keyCode: 37 },
  ArrowRight: { code: "ArrowRight", keyCode: 39 },
  Home: { code: "Home", keyCode: 36 },
  End: { code: "End", keyCode: 35 },
  PageUp: { code: "PageUp", keyCode: 33 },
  PageDown: { code: "PageDown", keyCode: 34 },
  Space: { key: " ", code: "Space", keyCode: 32, text: " " },
  BrowserBack: { code: "BrowserBack", keyCode: 166 },
  BrowserForward: { code: "BrowserForward", keyCode: 167 },
  BrowserHome: { code: "BrowserHome", keyCode: 172 },
};
for (let i = 1; i <= 12; i++) NAMED_KEYS[`F${i}`] = { code: `F${i}`, keyCode: 111 + i };
const NAMED_BY_LOWER = Object.fromEntries(Object.keys(NAMED_KEYS).map((n) => [n.toLowerCase(), n]));
const MODIFIERS = { Alt: 1, Control: 2, Meta: 4, Shift: 8 };
// By lower-case name; Mod is Control, or Meta on a Mac.
const MODIFIER_NAMES = {
  shift: MODIFIERS.Shift, control: MODIFIERS.Control, ctrl: MODIFIERS.Control, alt: MODIFIERS.Alt, option: MODIFIERS.Alt,
  meta: MODIFIERS.Meta, cmd: MODIFIERS.Meta, command: MODIFIERS.Meta, mod: -1,
};
const KEY_USAGE =
  "a key is a name (Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space, F1-F12) or one character, optionally after modifiers (Shift, Control/Ctrl, Alt/Option, Meta/Cmd, Mod = Control or Meta on a Mac): Shift+Tab, Control+a, Mod+Enter";

function onMac() {
  const p = globalThis.navigator?.userAgentData?.platform ?? globalThis.navigator?.platform ?? "";
  return /mac/i.test(p);
}

/** "Shift+Tab", "Control+a", "Mod+t", "Enter", "x" → what Input.dispatchKeyEvent needs. */
export function parseKey(spec, mac = onMac()) {
  const bad = (why) => invalid(`press ${JSON.stringify(spec)}: ${why}; ${KEY_USAGE}`);
  if (spec === "") throw bad("no key");
  let parts;
  if (spec === "+") parts = ["+"];
  else if (spec.endsWith("++")) parts = [...spec.slice(0, -2).split("+"), "+"];
  else parts = spec.split("+");
  const name = parts.pop();
  if (name === "") throw bad("no key after the modifiers");
  let modifiers = 0;
  for (const m of parts) {
    let bit = MODIFIER_NAMES[m.toLowerCase()];
    if (bit === undefined) throw bad(`unknown modifier ${JSON.stringify(m)}: use Alt, Control, Meta or Shift (or Mod)`);
    if (bit === -1) bit = mac ? MODIFIERS.Meta : MODIFIERS.Control;
    modifiers |= bit;
  }
  const shortcut = (modifiers & ~MODIFIERS.Shift) !== 0; // a chord with Control, Alt or Meta types nothing
  const named = NAMED_KEYS[name] ? name : NAMED_BY_LOWER[name.toLowerCase()];
  if (named) {
    const d = NAMED_KEYS[named];
    return { key: d.key ?? named, code: d.code, keyCode: d.keyCode, text: shortcut ? undefined : d.text, modifiers };
  }
  if ([...name].length !== 1) throw bad(`unknown key name ${JSON.stringify(name)}`);
  const upper = name.toUpperCase();
  const letter = /^[A-Za-z]$/.test(name);
  const digit = /^[0-9]$/.test(name);
  const key = letter && modifiers & MODIFIERS.Shift ? upper : name;
  return {
    key,
    code: letter ? `Key${upper}` : digit ? `Digit${name}` : "",
    keyCode: letter || digit ? upper.charCodeAt(0) : 0,
    text: shortcut ? undefined : key,
    modifiers,
  };
}

// ---- result shapes (bounded) -----------------------------------------------------------------

/** An observed element (or an ambiguous target's candidate) as sent to the host: bounded. */
export function element(e) {
  const n = (v) => (Number.isFinite(v) ? Math.round(v) : 0);
  return {
    id: clip(String(e?.id ?? ""), 32),
    role: clip(String(e?.role ?? ""), 64),
    name: clip(String(e?.name ?? ""), MAX_NAME_CHARS),
    x: n(e?.x),
    y: n(e?.y),
    width: n(e?.width),
    height: n(e?.height),
  };
}

/** page.js's observe result as sent to the host: known fields only, bounded. */
export function observation(o) {
  if (!o || typeof o !== "object") throw new Error("page.observe returned nothing");
  const els = Array.isArray(o.elements) ? o.elements : [];
  const outline = Array.isArray(o.outline) ? o.outline : [];
  const n = (v) => (Number.isFinite(v) ? Math.round(v) : 0);
  return {
    document: clip(String(o.document ?? ""), 128),
    epoch: Number.isSafeInteger(o.epoch) ? o.epoch : 0,
    url: clip(String(o.url ?? ""), MAX_URL_CHARS),
    title: clip(String(o.title ?? ""), 1024),
    scrollX: n(o.scrollX),
    scrollY: n(o.scrollY),
    elements: els.slice(0, MAX_ELEMENTS).map(element),
    truncated: !!o.truncated || els.length > MAX_ELEMENTS,
    outline: outline.slice(0, MAX_OUTLINE_NODES).map(outlineNode),
    outlineOffset: Number.isSafeInteger(o.outlineOffset) && o.outlineOffset >= 0 ? o.outlineOffset : 0,
    outlineMore: !!o.outlineMore || outline.length > MAX_OUTLINE_NODES,
  };
}

/** An outline node (page.js's observe) as sent to the host: known fields only, bounded. */
export function outlineNode(n) {
  const depth = Number.isSafeInteger(n?.depth) ? Math.min(Math.max(n.depth, 0), 64) : 0;
  const level = Number.isSafeInteger(n?.level) ? Math.min(Math.max(n.level, 0), 6) : 0;
  return {
    depth,
    role: clip(String(n?.role ?? ""), 64),
    name: clip(String(n?.name ?? ""), MAX_NAME_CHARS),
    text: clip(String(n?.text ?? ""), MAX_OUTLINE_TEXT),
    id: clip(String(n?.id ?? ""), 32),
    level,
    checked: n?.checked === true,
    disabled: n?.disabled === true,
  };
}

/** A page.js error ({reason, message, candidates?, document?, epoch?}) as the act's refusal. */
export function pageRefusal(e) {
  const reason = GUARD_REASONS.has(e.reason) ? e.reason : e.reason === "bad_request" ? "invalid_args" : "failed";
  const candidates = Array.isArray(e.candidates) ? e.candidates.slice(0, MAX_CANDIDATES).map(element) : undefined;
  const document = candidates && typeof e.document === "string" ? clip(e.document, 128) : undefined;
  const epoch = candidates && Number.isSafeInteger(e.epoch) ? e.epoch : undefined;
  return new ActRefusal(reason, clip(String(e.message ?? reason), 512), candidates, document, epoch);
}
