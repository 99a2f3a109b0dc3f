// tabwarden extension: frames the page script cannot walk itself (cross-origin frames in the
// page's process and out-of-process frames, OOPIFs), reached through chrome.debugger's
// flattened child sessions ({tabId, sessionId} debuggees, Chrome >= 125).
//
// The same design as the cdp driver (internal/browser/cdp/frames.go; docs/design.md
// "Cross-origin and out-of-process frames"):
//   * each act's debugger session auto-attaches (Target.setAutoAttach, flatten, filter
//     iframe), and so does each child session it accepts; a child is kept only when it is an
//     iframe target announced on the tab's own session or an accepted child's, and used only
//     while its frame hangs under the main frame and the browser names its <iframe> element in
//     the parent (DOM.getFrameOwner);
//   * each frame's <iframe> element is resolved into tabwarden's world of the parent
//     (DOM.resolveNode) and page.js is called on it (Runtime.callFunctionOn: frameInfo,
//     frameHit): whether that world reads the frame, and where its content box shows;
//   * an unreadable frame gets a world of its own and a label x<k> per frame document
//     (frameId, loaderId), never reused on the tab while this worker lives; refs x<k>.e<n>;
//   * mouse input goes to the frame's local root session at that root's coordinates, typing to
//     the tab's session (delivered to the focused frame).

import { ActRefusal, pageRefusal } from "./step.js";

export const FRAME_OUTLINE_BYTES = 16 << 10;
const MAX_FRAMES = 64;
const EVERYWHERE = { left: -1e9, top: -1e9, right: 1e9, bottom: 1e9 };

const inter = (a, b) => ({ left: Math.max(a.left, b.left), top: Math.max(a.top, b.top), right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom) });
const empty = (r) => r.right <= r.left || r.bottom <= r.top;
const has = (r, x, y) => x >= r.left && x < r.right && y >= r.top && y < r.bottom;

/**
 * FrameCheck: the act reached frames whose urls the host's url policy has not answered for
 * (policy.allowed and policy.refused name neither): nothing ran past the check; the act answers
 * {frameCheck: urls} and the host asks again with them answered.
 */
export class FrameCheck extends Error {
  constructor(urls) {
    super("frames to check against the url policy");
    this.urls = urls;
  }
}

/**
 * framePolicy: the act's `frames` argument as the host sent it ({allowed, refused}: urls), or
 * null (no policy: every frame is reached). Bounded.
 */
export function framePolicy(v) {
  if (v === undefined || v === null) return null;
  const list = (a) => (Array.isArray(a) ? a.slice(0, 256).filter((u) => typeof u === "string" && u.length <= 4096) : []);
  return { allowed: new Set(list(v.allowed)), refused: new Set(list(v.refused)) };
}

/** splitFrameRef: "x3.e4" → ["x3", "e4"]; null for a ref of the page's own world. */
export function splitFrameRef(ref) {
  const m = /^(x[0-9]+)\.(.+)$/.exec(String(ref ?? ""));
  return m ? [m[1], m[2]] : null;
}

/**
 * createFrames({chrome}) → {onEvent, startAct, stopAct, forgetTab, of}. onEvent is
 * fed chrome.debugger.onEvent while an act runs; of(tabId, send, page, source) gives the act's
 * frame functions.
 */
export function createFrames({ chrome }) {
  const children = new Map(); // tabId -> Map(sessionId -> {session, frameId, parent, via})
  const labels = new Map(); // tabId -> {frames: Map(label -> fw), next}

  function onEvent(source, method, params) {
    const tabId = source?.tabId;
    const kids = children.get(tabId);
    if (!kids) return false;
    if (method === "Target.detachedFromTarget") {
      kids.delete(params?.sessionId);
      return true;
    }
    if (method !== "Target.attachedToTarget") return false;
    const on = source.sessionId ?? "";
    const sessionId = params?.sessionId;
    const info = params?.targetInfo ?? {};
    const ok = typeof sessionId === "string" && info.type === "iframe" && typeof info.targetId === "string" && (on === "" || kids.has(on));
    if (!ok) {
      if (typeof sessionId === "string") chrome.debugger.sendCommand({ tabId }, "Target.detachFromTarget", { sessionId }).catch(() => {});
      return true;
    }
    kids.set(sessionId, { session: sessionId, frameId: info.targetId, parent: info.parentFrameId ?? "", via: on });
    // Its own out-of-process frames are announced on its session.
    chrome.debugger
      .sendCommand({ tabId, sessionId }, "Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: "iframe" }] })
      .catch(() => {});
    return true;
  }

  function stateOf(tabId) {
    if (!labels.has(tabId)) labels.set(tabId, { frames: new Map(), next: 0 });
    return labels.get(tabId);
  }

  /** The act's frame functions on tabId: send (the tab's session), page (its world), source(). */
  function of(tabId, send, page, source, policy = null) {
    const st = stateOf(tabId);
    const sendTo = (session, method, params) =>
      session ? chrome.debugger.sendCommand({ tabId, sessionId: session }, method, params ?? {}) : send(method, params);
    const worlds = new Map(); // label -> {contextId, nonce} for this act

    async function evaluateIn(session, contextId, op, args) {
      const src = await source();
      const r = await sendTo(session, "Runtime.evaluate", { expression: `(${src})(${JSON.stringify(op)}, ${JSON.stringify(args)})`, contextId, returnByValue: true });
      if (r?.exceptionDetails) throw new Error(`page.${op} threw: ${String(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text ?? "").slice(0, 300)}`);
      return r?.result?.value;
    }

    async function ensureWorld(fw, session) {
      if (worlds.has(fw.label)) return worlds.get(fw.label);
      const w = await sendTo(session, "Page.createIsolatedWorld", { frameId: fw.frameId, worldName: "tabwarden" });
      if (fw.nonce) {
        const v = await evaluateIn(session, w.executionContextId, "info", { world: fw.nonce });
        if (v && !v.error && v.document === fw.doc) {
          const got = { contextId: w.executionContextId, nonce: fw.nonce, session };
          worlds.set(fw.label, got);
          return got;
        }
      }
      const a = new Uint8Array(16);
      crypto.getRandomValues(a);
      const nonce = Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
      const v = await evaluateIn(session, w.executionContextId, "init", { world: nonce });
      if (!v || v.error) throw new Error(`page.init in a frame: ${v?.error?.message ?? "no answer"}`);
      fw.nonce = nonce;
      fw.doc = v.document;
      const got = { contextId: w.executionContextId, nonce, session };
      worlds.set(fw.label, got);
      return got;
    }

    /** runIn runs op in world fw (null: the page's). A page error is thrown as a refusal. */
    async function runIn(p, op, args) {
      if (!p) return page(op, args);
      const w = await ensureWorld(p.fw, p.node.session);
      const v = await evaluateIn(w.session, w.contextId, op, { ...args, world: w.nonce });
      if (v?.error) {
        if (v.error.reason === "world_mismatch") throw new ActRefusal("stale_ref", `frame ${p.fw.label} no longer shows the document observed: observe again`);
        const c = Array.isArray(v.error.candidates) ? v.error.candidates.map((e) => ({ ...e, id: `${p.fw.label}.${e.id}`, x: e.x + Math.round(p.off.x), y: e.y + Math.round(p.off.y) })) : undefined;
        throw pageRefusal({ ...v.error, candidates: c });
      }
      return v;
    }

    /** callOn runs op of page.js in the world of host (null: the page's) with element node as receiver. */
    async function callOn(host, node, op, args) {
      let session = "";
      let contextId;
      let nonce;
      if (host) {
        const w = await ensureWorld(host.fw, host.node.session);
        ({ session, contextId, nonce } = w);
      } else {
        const info = await page("info", {}); // makes sure the page's world is there
        void info;
        ({ contextId, nonce } = page.world());
      }
      const obj = await sendTo(session, "DOM.resolveNode", { backendNodeId: node, executionContextId: contextId, objectGroup: "tabwarden-frames" });
      const src = await source();
      const r = await sendTo(session, "Runtime.callFunctionOn", {
        functionDeclaration: `(${src}\n)`,
        objectId: obj.object.objectId,
        arguments: [{ value: op }, { value: { ...args, world: nonce } }],
        returnByValue: true,
      });
      await sendTo(session, "Runtime.releaseObjectGroup", { objectGroup: "tabwarden-frames" }).catch(() => {});
      if (r?.exceptionDetails) throw new Error(`page.${op} threw`);
      const v = r?.result?.value;
      if (v?.error) throw new Error(`page.${op}: ${v.error.message}`);
      return v;
    }

    /** nodes: the main frame and the frames under it (parents first), with their local roots' sessions. */
    async function nodes() {
      const tree = await send("Page.getFrameTree");
      const top = { id: tree.frameTree.frame.id, loader: tree.frameTree.frame.loaderId, url: tree.frameTree.frame.url, session: "", root: tree.frameTree.frame.id };
      const all = new Map();
      const walk = (t, parent, session, root) => {
        for (const c of t.childFrames ?? []) {
          all.set(c.frame.id, { id: c.frame.id, parent, loader: c.frame.loaderId, url: c.frame.url, session, root });
          walk(c, c.frame.id, session, root);
        }
      };
      walk(tree.frameTree, top.id, "", top.id);
      for (const ct of children.get(tabId)?.values() ?? []) {
        let t;
        try {
          t = await sendTo(ct.session, "Page.getFrameTree");
        } catch {
          continue;
        }
        if (t?.frameTree?.frame?.id !== ct.frameId) continue;
        const parent = ct.parent || t.frameTree.frame.parentId;
        if (!parent || parent === ct.frameId) continue;
        all.set(ct.frameId, { id: ct.frameId, parent, loader: t.frameTree.frame.loaderId, url: t.frameTree.frame.url, session: ct.session, root: ct.frameId });
        walk(t.frameTree, ct.frameId, ct.session, ct.frameId);
      }
      const out = [];
      let level = [top.id];
      const seen = new Set(level);
      while (level.length && out.length < MAX_FRAMES) {
        const next = [];
        for (const p of level) {
          for (const n of all.values()) {
            if (n.parent === p && !seen.has(n.id)) {
              seen.add(n.id);
              out.push(n);
              next.push(n.id);
            }
          }
        }
        level = next;
      }
      return { top, list: out };
    }

    function worldOf(n) {
      for (const fw of st.frames.values()) if (fw.frameId === n.id && fw.loader === n.loader) return fw;
      st.next++;
      const fw = { label: `x${st.next}`, frameId: n.id, loader: n.loader, nonce: "", doc: "" };
      st.frames.set(fw.label, fw);
      return fw;
    }

    /**
     * place: the frames, where they show (see the top of this file). Under a policy, a frame the
     * host refused is not reached, and one it has not answered for is not either: with check,
     * place throws FrameCheck naming them (before anything ran), else they count as refused.
     */
    async function place(check = true) {
      const unknown = [];
      const { top, list } = await nodes();
      const current = new Set(list.map((n) => `${n.id} ${n.loader}`));
      for (const [label, fw] of st.frames) if (!current.has(`${fw.frameId} ${fw.loader}`)) st.frames.delete(label);
      const byId = new Map();
      const frames = [];
      const hostOf = (id) => {
        if (id === top.id) return { host: null, off: { x: 0, y: 0 }, clip: EVERYWHERE };
        const p = byId.get(id);
        if (!p || p.refused || (!p.fw && !p.reachable)) return null;
        if (p.fw) return { host: p, off: p.off, clip: p.clip };
        const h = hostOf(p.node.parent);
        return h && { host: h.host, off: h.off, clip: p.clip };
      };
      for (const n of list) {
        const h = hostOf(n.parent);
        if (!h) continue;
        const parentSession = n.parent === top.id ? "" : byId.get(n.parent).node.session;
        let owner;
        try {
          owner = (await sendTo(parentSession, "DOM.getFrameOwner", { frameId: n.id }))?.backendNodeId;
        } catch {
          continue;
        }
        if (!owner) continue;
        let fi;
        try {
          fi = await callOn(h.host, owner, "frameInfo", {});
        } catch {
          continue;
        }
        const p = { node: n, host: h.host, owner, reachable: !!fi.reachable, slot: fi.slot || 0, fw: null, hostOff: h.off };
        p.off = { x: h.off.x + fi.x, y: h.off.y + fi.y };
        p.clip = inter(h.clip, { left: fi.clip.left + h.off.x, top: fi.clip.top + h.off.y, right: fi.clip.right + h.off.x, bottom: fi.clip.bottom + h.off.y });
        byId.set(n.id, p);
        frames.push(p);
        if (p.reachable) continue;
        if (policy && !policy.allowed.has(n.url)) {
          p.refused = policy.refused.has(n.url) ? "refused" : "unknown";
          if (p.refused === "unknown" && !unknown.includes(n.url)) unknown.push(n.url);
          continue;
        }
        p.fw = worldOf(n);
        try {
          await ensureWorld(p.fw, n.session);
        } catch {
          // No world there (a sandboxed frame without scripts, a frame on its way out): it
          // stays as the page script describes it, unreached.
          p.fw = null;
        }
      }
      if (check && unknown.length) throw new FrameCheck(unknown);
      return { top, frames, byId, own: () => frames.filter((p) => p.fw && !p.refused) };
    }

    /** observe: the page's observation with its frames' spliced in. */
    async function observe(args) {
      let top = await page("observe", { ...args, frames: true });
      let v = await place();
      if (v.own().some((p) => p.slot === 0 && !empty(p.clip))) {
        top = await page("observe", { ...args, frames: true });
        v = await place();
      }
      const outlines = new Map([["", top.outline ?? []]]);
      const bySlot = new Map();
      for (const p of v.frames) if (!p.reachable && p.slot) bySlot.set(`${p.host?.fw?.label ?? ""} ${p.slot}`, p);
      const max = Math.max(Number(args.max) || 200, 1);
      for (const p of v.own()) {
        if (empty(p.clip)) continue;
        let fo;
        try {
          fo = await runIn(p, "observe", { max: Math.max(max - top.elements.length, 1), outlineBytes: FRAME_OUTLINE_BYTES, frames: true });
        } catch {
          continue;
        }
        for (const el of fo.elements ?? []) {
          const e = { ...el, id: `${p.fw.label}.${el.id}`, x: el.x + Math.round(p.off.x), y: el.y + Math.round(p.off.y) };
          const box = { left: e.x, top: e.y, right: e.x + e.width, bottom: e.y + e.height };
          if (top.elements.length >= max) {
            top.truncated = true;
            continue;
          }
          if (!empty(inter(box, p.clip))) top.elements.push(e);
        }
        outlines.set(p.fw.label, (fo.outline ?? []).map((n) => (n.id ? { ...n, id: `${p.fw.label}.${n.id}` } : n)));
      }
      const out = [];
      const seen = new Set();
      const splice = (key, depth) => {
        if (seen.has(key)) return;
        seen.add(key);
        for (const n of outlines.get(key) ?? []) {
          const node = { ...n, depth: n.depth + depth };
          delete node.frame;
          const p = n.frame ? bySlot.get(`${key} ${n.frame}`) : undefined;
          if (p?.fw && outlines.has(p.fw.label)) node.text = "";
          if (p?.refused === "refused") node.text = `a frame tabwarden does not observe: the profile's url policy refuses ${p.node.url}`;
          out.push(node);
          if (p?.fw) splice(p.fw.label, node.depth + 1);
        }
      };
      splice("", 0);
      top.outline = out;
      return top;
    }

    /** route: the world a target belongs to, and the target for it. */
    async function route(t) {
      const fr = t && t.ref ? splitFrameRef(t.ref) : null;
      if (t?.ref && !fr) return { p: null, target: t };
      if (!t?.ref && !t?.text) return { p: null, target: t };
      if (fr) {
        const fw = st.frames.get(fr[0]);
        if (!fw) throw new ActRefusal("stale_ref", `ref ${t.ref} names frame ${fr[0]}, which no observation of this page showed: observe again`);
        const info = await page("info", {});
        if (t.document !== info.document) throw new ActRefusal("stale_ref", `ref ${t.ref} is from document ${t.document}; the page now shows document ${info.document} (it navigated or reloaded): observe again`);
      }
      const v = await place();
      if (fr) {
        const fw = st.frames.get(fr[0]);
        const gone = fw && v.frames.find((q) => q.node.id === fw.frameId && q.node.loader === fw.loader && q.refused === "refused");
        if (gone) throw new ActRefusal("url_not_allowed", `the element is in a frame of ${gone.node.url}, which the profile's url policy refuses: tabwarden neither reads nor drives it`);
        const p = fw && v.frames.find((q) => q.fw === fw);
        if (!p) throw new ActRefusal("stale_ref", `ref ${t.ref} names frame ${fr[0]}, which has since navigated or been removed (a ref never names the frame's new document): observe again`);
        return { p, target: { ref: fr[1], document: fw.doc }, v };
      }
      const hits = [];
      let total = 0;
      let notFound = null;
      for (const p of [null, ...v.own().filter((q) => !empty(q.clip))]) {
        let cands;
        try {
          const r = await runIn(p, "find", { target: t });
          const e = r.found;
          cands = [p ? { ...e, id: `${p.fw.label}.${e.id}`, x: e.x + Math.round(p.off.x), y: e.y + Math.round(p.off.y) } : e];
        } catch (e) {
          if (e?.reason === "ambiguous_target") cands = e.candidates ?? [];
          else if (e?.reason === "target_not_found") {
            if (!p) notFound = e;
            continue;
          } else if (!p) throw e;
          else continue;
        }
        total += cands.length;
        hits.push({ p, cands });
      }
      if (total === 0) throw notFound ?? new ActRefusal("target_not_found", `no visible interactive element reads ${JSON.stringify(t.text)}: observe to see what the page offers`);
      if (total === 1) return { p: hits[0].p, target: t, v };
      const info = await page("info", {});
      throw new ActRefusal("ambiguous_target", `${total} visible elements read ${JSON.stringify(t.text)}, in the page and its frames: target one of them by ref`, hits.flatMap((h) => h.cands), info.document, info.epoch);
    }

    /** point: where input at a frame's point goes: {session, x, y}, after the hit test up the frames. */
    async function point(fw, x, y) {
      const v = await place(false); // the target's frame passed the check in route
      const p = v.frames.find((q) => q.fw === fw);
      if (!p) throw new ActRefusal("stale_ref", `frame ${fw.label} has since navigated or been removed: observe again`);
      const tx = p.off.x + x;
      const ty = p.off.y + y;
      if (!has(p.clip, tx, ty)) throw new ActRefusal("target_not_found", `the element is in frame ${fw.label}, outside the part of the frame the page's viewport shows: scroll the page to it and observe again`);
      for (let q = p; q; ) {
        const hostOff = q.hostOff;
        const r = await callOn(q.host, q.owner, "frameHit", { x: tx - hostOff.x, y: ty - hostOff.y });
        if (!r?.hit) throw new ActRefusal("target_not_found", `the element is in a frame that ${r?.what ?? "something"} covers at its point (an overlay over the frame?): observe again`);
        q = q.host;
      }
      const node = p.node;
      if (!node.session) return { session: "", x: tx, y: ty };
      const root = v.byId.get(node.root);
      if (!root) throw new ActRefusal("target_not_found", "the element's frame is no longer shown: observe again");
      return { session: node.session, x: tx - root.off.x, y: ty - root.off.y };
    }

    /** locateIn: op (locate, focus, field, fillFocus, select, upload) in the target's world, and where input goes. */
    async function locateIn(op, t, extra) {
      const r = await route(t);
      if (!r.p) {
        const at = await page(op, { target: r.target, ...extra });
        return { session: "", x: Number(at?.x), y: Number(at?.y) };
      }
      const at = await runIn(r.p, op, { target: r.target, ...extra });
      return point(r.p.fw, Number(at?.x), Number(at?.y));
    }

    /** hasFrames: whether the tab may have frames to reach (the fast path otherwise). */
    async function hasFrames() {
      if ((children.get(tabId)?.size ?? 0) > 0) return true;
      const tree = await send("Page.getFrameTree");
      return (tree?.frameTree?.childFrames?.length ?? 0) > 0;
    }

    return { observe, locateIn, hasFrames, sendTo };
  }

  return {
    onEvent,
    /** tabId's act starts: its child sessions are tracked from now (they die with the session). */
    startAct: (tabId) => children.set(tabId, new Map()),
    stopAct: (tabId) => children.delete(tabId),
    forgetTab: (tabId) => labels.delete(tabId),
    of,
  };
}
