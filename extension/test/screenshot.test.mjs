// The `act` command's screenshot step: page.js's shotBox, then Page.captureScreenshot of the
// viewport (no clip) or of the target's box (a clip in page coordinates), as png or jpeg; a hidden
// tab is refused (page_not_visible) with no capture and nothing activated; an image over
// maxBytes is answered with its size only; format and scale are checked.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok, refused } from "./harness.mjs";

// 12 bytes of image, as base64.
const IMAGE = Buffer.from("tabwarden-px").toString("base64");

/** A page 800x600, scrolled to (0, 100), whose element boxes are at (10, 20) 200x40. */
function shotPage(browser, { hidden = false } = {}) {
  const captures = [];
  let nonce = null;
  browser.setPage(async (tabId, method, params) => {
    switch (method) {
      case "Page.enable":
        return {};
      case "Page.handleJavaScriptDialog":
        throw new Error("No dialog is showing");
      case "Page.getFrameTree":
        return { frameTree: { frame: { id: `frame-${tabId}` } } };
      case "Page.createIsolatedWorld":
        return { executionContextId: 9 };
      case "Runtime.evaluate": {
        const m = /\)\(("[a-zA-Z]+"), (\{.*\})\)$/s.exec(params.expression);
        const op = JSON.parse(m[1]);
        const args = JSON.parse(m[2]);
        if (op === "init") nonce = args.world;
        if (op === "shotBox") {
          const vp = { x: 0, y: 0, width: 800, height: 600, pageX: 0, pageY: 100, dpr: 1, hidden };
          if (args.target?.text === "nothing") {
            return { result: { value: { error: { reason: "target_not_found", message: "no visible interactive element reads \"nothing\"" } } } };
          }
          return { result: { value: args.target ? { ...vp, x: 10, y: 20, width: 200, height: 40 } : vp } };
        }
        return { result: { value: { document: "doc-1", epoch: 0, world: nonce } } };
      }
      case "Page.captureScreenshot":
        captures.push(params);
        return { data: IMAGE };
    }
    throw new Error(`the worker sent ${method}, which a screenshot never needs`);
  });
  return { captures };
}

test("a screenshot takes the viewport or the target's box, never focusing anything", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { captures } = shotPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const focused = browser.focusedWindowId();
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  assert.deepEqual(ok(await act({ kind: "screenshot" })), { screenshot: { format: "png", size: 12, data: IMAGE } });
  assert.deepEqual(captures.at(-1), { format: "png" }, "the viewport: no clip");
  assert.deepEqual(ok(await act({ kind: "screenshot", format: "jpeg", quality: 40, target: { text: "Send" } })), { screenshot: { format: "jpeg", size: 12, data: IMAGE } });
  assert.deepEqual(captures.at(-1), { format: "jpeg", quality: 40, clip: { x: 10, y: 120, width: 200, height: 40, scale: 1 } }, "the box, in page coordinates");
  ok(await act({ kind: "screenshot", format: "jpeg", scale: 0.5 }));
  assert.deepEqual(captures.at(-1), { format: "jpeg", quality: 80, clip: { x: 0, y: 100, width: 800, height: 600, scale: 0.5 } });
  assert.deepEqual(ok(await act({ kind: "screenshot", maxBytes: 10 })), { screenshot: { format: "png", size: 12 } }, "too large: its size, no data");

  refused(await act({ kind: "screenshot", target: { text: "nothing" } }), "target_not_found");
  assert.match(refused(await act({ kind: "screenshot", format: "gif" }), "invalid_args").message, /png or jpeg/);
  assert.match(refused(await act({ kind: "screenshot", scale: 2 }), "invalid_args").message, /scale/);

  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
});

test("a screenshot of a hidden tab is refused, and nothing is captured or activated", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { captures } = shotPage(browser, { hidden: true });
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const e = refused(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "screenshot" } }), "page_not_visible");
  assert.match(e.message, /never brings a tab to the front/);
  assert.equal(captures.length, 0, "no capture: it would wait for a frame for ever");
  assert.equal(browser.tab(a.tabId).active, false);
});
