// The `act` command's hover and select steps. Hover: the pointer moves over the point page.js locates for the
// target (one mouseMoved, no button), nothing is pressed, nothing is focused or activated, and a
// hover needs a target. Select: page.js's select op, with the target and the option's text, and
// nothing else (no input event, no focus).

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok, refused } from "./harness.mjs";

/** A page whose page.js locates every target at (70, 45), except the text "nothing". */
function hoverPage(browser) {
  const input = [];
  const evals = [];
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
        assert.equal(params.contextId, 9, "evaluated in the tabwarden world");
        const m = /\)\(("[a-zA-Z]+"), (\{.*\})\)$/s.exec(params.expression);
        const op = JSON.parse(m[1]);
        const args = JSON.parse(m[2]);
        evals.push({ op, args });
        if (op === "init") nonce = args.world;
        if (op === "locate" && args.target?.text === "nothing") {
          return { result: { value: { error: { reason: "target_not_found", message: "no visible interactive element reads \"nothing\"" } } } };
        }
        if (op === "locate") return { result: { value: { x: 70, y: 45, id: "e3" } } };
        if (op === "select" && args.text === "Narnia") {
          return { result: { value: { error: { reason: "target_not_found", message: "the drop-down has no option labelled or valued \"Narnia\"" } } } };
        }
        if (op === "select") return { result: { value: { x: 70, y: 45, value: "ca" } } };
        return { result: { value: { document: "doc-1", epoch: 0, world: nonce } } };
      }
      case "Input.dispatchMouseEvent":
        input.push(params);
        return {};
    }
    throw new Error(`the worker sent ${method}, which a hover never needs`);
  });
  return { input, evals };
}

test("hover moves the pointer over the target without pressing or focusing anything", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { input, evals } = hoverPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const focused = browser.focusedWindowId();
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  ok(await act({ kind: "hover", target: { text: "Menu" } }));
  assert.deepEqual(evals.at(-1), { op: "locate", args: { target: { text: "Menu" }, world: evals.at(-1).args.world } });
  assert.deepEqual(input, [{ type: "mouseMoved", x: 70, y: 45, button: "none", buttons: 0 }], "one move, no button");

  assert.match(refused(await act({ kind: "hover", target: { text: "nothing" } }), "target_not_found").message, /nothing/);
  assert.match(refused(await act({ kind: "hover" }), "invalid_args").message, /hover needs a target/);
  assert.equal(input.length, 1, "nothing more was sent");

  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
  assert.deepEqual(browser.attachedTabs(), []);
});

test("select hands the target and the option to page.js, and needs both", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { input, evals } = hoverPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  ok(await act({ kind: "select", target: { ref: "e5", document: "doc-1" }, text: "Canada" }));
  const last = evals.at(-1);
  assert.equal(last.op, "select");
  assert.deepEqual({ target: last.args.target, text: last.args.text }, { target: { ref: "e5", document: "doc-1" }, text: "Canada" });
  assert.match(refused(await act({ kind: "select", target: { text: "Country" }, text: "Narnia" }), "target_not_found").message, /Narnia/);
  assert.match(refused(await act({ kind: "select", text: "Canada" }), "invalid_args").message, /select needs a target/);
  assert.match(refused(await act({ kind: "select", target: { text: "Country" } }), "invalid_args").message, /select needs text/);
  assert.deepEqual(input, [], "no input events: page.js sets the value");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.deepEqual(browser.attachedTabs(), []);
});
