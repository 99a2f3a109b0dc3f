// The `act` command's fill step: page.js's field op checks every field first (a refusal names the
// field and nothing is typed), then each field is focused with its content selected (fillFocus)
// and its text inserted (Input.insertText), in order; nothing is focused or activated in the
// browser's windows.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok, refused } from "./harness.mjs";

/** A page whose page.js finds every field but "Menu" (a button) and "nothing" (absent). */
function formPage(browser) {
  const sent = [];
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
        if (op === "init") {
          nonce = args.world;
          return { result: { value: { document: "doc-1", epoch: 0, world: nonce } } };
        }
        if (op === "field" || op === "fillFocus") {
          sent.push(`${op} ${args.target.text}`);
          if (args.target.text === "Menu") {
            return { result: { value: { error: { reason: "target_not_found", message: "<button> is not a text field" } } } };
          }
          if (args.target.text === "nothing") {
            return { result: { value: { error: { reason: "target_not_found", message: "no visible interactive element reads \"nothing\"" } } } };
          }
          return { result: { value: { x: 70, y: 45 } } };
        }
        return { result: { value: { document: "doc-1", epoch: 0, world: nonce } } };
      }
      case "Input.insertText":
        sent.push(`insert ${params.text}`);
        return {};
    }
    throw new Error(`the worker sent ${method}, which a fill never needs`);
  });
  return sent;
}

test("fill checks every field, then focuses, selects and replaces each in order", async () => {
  const env = await setup();
  const { browser, user } = env;
  const sent = formPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const focused = browser.focusedWindowId();
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  ok(await act({ kind: "fill", fields: [{ target: { text: "Name" }, text: "Ada" }, { target: { text: "Email" }, text: "ada@example.com" }] }));
  assert.deepEqual(sent, ["field Name", "field Email", "fillFocus Name", "insert Ada", "fillFocus Email", "insert ada@example.com"]);

  sent.length = 0;
  const e = refused(await act({ kind: "fill", fields: [{ target: { text: "Name" }, text: "Grace" }, { target: { text: "Menu" }, text: "x" }] }), "target_not_found");
  assert.match(e.message, /^field 1: <button> is not a text field; no field was filled$/);
  assert.deepEqual(sent, ["field Name", "field Menu"], "nothing was typed");

  sent.length = 0;
  assert.match(refused(await act({ kind: "fill", fields: [] }), "invalid_args").message, /fill needs fields/);
  assert.match(refused(await act({ kind: "fill", fields: [{ target: { text: "Name" } }] }), "invalid_args").message, /fields\[0\] needs text/);
  assert.match(refused(await act({ kind: "fill", fields: [{ text: "Ada" }] }), "invalid_args").message, /fields\[0\] needs a target/);
  assert.deepEqual(sent, [], "an invalid fill sends nothing");

  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
});
