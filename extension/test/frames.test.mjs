// frames.js: cross-origin and out-of-process frames through chrome.debugger's flattened child
// sessions. Which child sessions are taken (only iframe targets announced on the tab's session
// or an accepted child's; anything else is detached), how a frame's observation is offset and
// spliced, and that frame refs are resolved by the worker alone (a label it never drew, another
// document, a frame that navigated: stale_ref).

import test from "node:test";
import assert from "node:assert/strict";
import { createFrames, splitFrameRef, FrameCheck, framePolicy } from "../frames.js";
import { ActRefusal } from "../step.js";

test("splitFrameRef: x<k>.<rest> only", () => {
  assert.deepEqual(splitFrameRef("x3.e4"), ["x3", "e4"]);
  assert.deepEqual(splitFrameRef("x12.f1.e4"), ["x12", "f1.e4"]);
  for (const r of ["e4", "f1.e4", "x.e4", "xa.e4", "x1", "", undefined]) assert.equal(splitFrameRef(r), null, String(r));
});

/** A fake chrome.debugger: one tab (7), a main frame TOP and an out-of-process frame F1 (session S1). */
function fakeChrome() {
  const calls = [];
  const state = { loader: "L1", frameDoc: "dF1", inits: 0 };
  const chrome = {
    debugger: {
      async sendCommand(target, method, params) {
        calls.push({ session: target.sessionId ?? "", method, params });
        const s = target.sessionId ?? "";
        switch (method) {
          case "Target.detachFromTarget":
          case "Target.setAutoAttach":
          case "Runtime.releaseObjectGroup":
            return {};
          case "Page.getFrameTree":
            if (s === "S1") return { frameTree: { frame: { id: "F1", parentId: "TOP", loaderId: state.loader, url: "http://localhost:1/login" } } };
            return { frameTree: { frame: { id: "TOP", loaderId: "LT", url: "http://127.0.0.1:1/" } } };
          case "DOM.getFrameOwner":
            assert.equal(s, "", "the owner is asked of the parent's session");
            return { backendNodeId: 5 };
          case "DOM.resolveNode":
            return { object: { objectId: "obj-5" } };
          case "Runtime.callFunctionOn": {
            const op = params.arguments[0].value;
            if (op === "frameInfo") return { result: { value: { reachable: false, slot: 1, x: 10, y: 20, clip: { left: 10, top: 20, right: 410, bottom: 320 } } } };
            if (op === "frameHit") return { result: { value: { hit: true } } };
            throw new Error(op);
          }
          case "Page.createIsolatedWorld":
            assert.equal(s, "S1", "a frame's world is made on its own session");
            return { executionContextId: 44 };
          case "Runtime.evaluate": {
            const m = /\)\(("[a-zA-Z]+"), (\{.*\})\)$/s.exec(params.expression);
            const op = JSON.parse(m[1]);
            if (op === "init") {
              state.inits++;
              return { result: { value: { document: state.frameDoc } } };
            }
            if (op === "info") return { result: { value: { document: state.frameDoc } } };
            if (op === "observe") {
              return { result: { value: { document: state.frameDoc, elements: [{ id: "e1", role: "button", name: "Sign in", x: 5, y: 6, width: 50, height: 20 }], outline: [{ depth: 0, role: "button", name: "Sign in", text: "", id: "e1" }] } } };
            }
            if (op === "locate") return { result: { value: { x: 30, y: 16 } } };
            throw new Error(op);
          }
        }
        throw new Error(`unexpected ${method}`);
      },
    },
  };
  return { chrome, calls, state };
}

function pageStub() {
  const page = async (op) => {
    if (op === "info") return { document: "dTOP", epoch: 0 };
    if (op === "observe") {
      return {
        document: "dTOP", elements: [{ id: "e1", role: "link", name: "Home", x: 0, y: 0, width: 10, height: 10 }],
        outline: [{ depth: 0, role: "iframe", name: "Login", text: "a frame … cannot reach", id: "", frame: 1 }],
      };
    }
    throw new Error(op);
  };
  page.world = () => ({ contextId: 3, nonce: "n" });
  return page;
}

const source = async () => "function tabwardenPage(op, args) {}";

test("only iframe targets announced on the tab's session or an accepted child's are taken", async () => {
  const { chrome, calls } = fakeChrome();
  const frames = createFrames({ chrome });
  assert.equal(frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "S0", targetInfo: { type: "iframe", targetId: "F0" } }), false, "no act runs: nothing is taken");
  frames.startAct(7);
  frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "S1", targetInfo: { type: "iframe", targetId: "F1", parentFrameId: "TOP" } });
  frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "SP", targetInfo: { type: "page", targetId: "P" } });
  frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "SW", targetInfo: { type: "worker", targetId: "W" } });
  frames.onEvent({ tabId: 7, sessionId: "unknown" }, "Target.attachedToTarget", { sessionId: "SX", targetInfo: { type: "iframe", targetId: "FX" } });
  frames.onEvent({ tabId: 7, sessionId: "S1" }, "Target.attachedToTarget", { sessionId: "S2", targetInfo: { type: "iframe", targetId: "F2", parentFrameId: "F1" } });
  const detached = calls.filter((c) => c.method === "Target.detachFromTarget").map((c) => c.params.sessionId);
  assert.deepEqual(detached.sort(), ["SP", "SW", "SX"]);
  const autoAttached = calls.filter((c) => c.method === "Target.setAutoAttach").map((c) => c.session);
  assert.deepEqual(autoAttached.sort(), ["S1", "S2"], "an accepted child's own frames are announced on its session");
});

test("a frame's elements are offset into the page's viewport, its outline spliced under its node; frame refs are the worker's", async () => {
  const { chrome, calls, state } = fakeChrome();
  const frames = createFrames({ chrome });
  frames.startAct(7);
  frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "S1", targetInfo: { type: "iframe", targetId: "F1", parentFrameId: "TOP" } });
  const send = (m, p) => chrome.debugger.sendCommand({ tabId: 7 }, m, p);
  const fr = frames.of(7, send, pageStub(), source);
  assert.equal(await fr.hasFrames(), true);
  const o = await fr.observe({ max: 50 });
  assert.deepEqual(o.elements.map((e) => [e.id, e.x, e.y]), [["e1", 0, 0], ["x1.e1", 15, 26]]);
  assert.deepEqual(o.outline.map((n) => [n.depth, n.role, n.id, n.text]), [[0, "iframe", "", ""], [1, "button", "x1.e1", ""]]);
  assert.ok(o.outline.every((n) => !("frame" in n)), "the frame numbers stay in the worker");

  // A click by the frame's ref: located in the frame's world, hit-tested up the frames, input
  // to the frame's session at its own coordinates.
  const at = await fr.locateIn("locate", { ref: "x1.e1", document: "dTOP" });
  assert.deepEqual(at, { session: "S1", x: 30, y: 16 });
  assert.ok(calls.some((c) => c.method === "Runtime.callFunctionOn" && c.params.arguments[0].value === "frameHit"));

  const stale = async (t, what) => {
    await assert.rejects(fr.locateIn("locate", t), (e) => e instanceof ActRefusal && e.reason === "stale_ref", what);
  };
  await stale({ ref: "x9.e1", document: "dTOP" }, "a label never drawn");
  await stale({ ref: "x1.e1", document: "dOTHER" }, "another document of the page");
  state.loader = "L2"; // the frame navigated
  await stale({ ref: "x1.e1", document: "dTOP" }, "a frame that navigated");
  const o2 = await fr.observe({ max: 50 });
  assert.deepEqual(o2.elements.map((e) => e.id), ["e1", "x2.e1"], "its new document gets a new label, never the old one");
});

test("under the host's url policy a frame is reached only when its url is allowed", async () => {
  const { chrome, calls } = fakeChrome();
  const frames = createFrames({ chrome });
  frames.startAct(7);
  frames.onEvent({ tabId: 7 }, "Target.attachedToTarget", { sessionId: "S1", targetInfo: { type: "iframe", targetId: "F1", parentFrameId: "TOP" } });
  const send = (m, p) => chrome.debugger.sendCommand({ tabId: 7 }, m, p);
  const url = "http://localhost:1/login";

  // Not answered for yet: nothing is reached, the act asks (FrameCheck).
  const unknown = frames.of(7, send, pageStub(), source, framePolicy({ allowed: [], refused: [] }));
  await assert.rejects(unknown.observe({ max: 50 }), (e) => e instanceof FrameCheck && e.urls.length === 1 && e.urls[0] === url);
  await assert.rejects(unknown.locateIn("locate", { text: "Sign in" }), (e) => e instanceof FrameCheck);
  assert.ok(!calls.some((c) => c.method === "Page.createIsolatedWorld"), "no world in a frame the policy has not answered for");

  // Refused: not observed (its node says why), a ref into it is url_not_allowed.
  const allowed = frames.of(7, send, pageStub(), source, framePolicy({ allowed: [url], refused: [] }));
  const o = await allowed.observe({ max: 50 });
  const ref = o.elements.find((e) => e.id.startsWith("x")).id;
  const refused = frames.of(7, send, pageStub(), source, framePolicy({ allowed: [], refused: [url] }));
  const o2 = await refused.observe({ max: 50 });
  assert.deepEqual(o2.elements.map((e) => e.id), ["e1"]);
  assert.match(o2.outline[0].text, /url policy refuses/);
  await assert.rejects(refused.locateIn("locate", { ref, document: "dTOP" }), (e) => e instanceof ActRefusal && e.reason === "url_not_allowed");
  assert.equal(framePolicy(undefined), null, "no policy: every frame is reached");
});
