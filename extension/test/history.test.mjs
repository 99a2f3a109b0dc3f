// The `act` command's history steps: back, forward and reload move the tab through its own
// history with chrome.tabs (never the debugger, never activating anything), wait until the
// document has loaded, and refuse (no_history) a move with no entry that way.

import test from "node:test";
import assert from "node:assert/strict";
import { setup } from "./harness.mjs";

const ok = (frame) => {
  assert.equal(frame.ok, true, `expected ok, got ${JSON.stringify(frame.error)}`);
  return frame.result;
};
const refused = (frame, reason) => {
  assert.equal(frame.ok, false, `expected refusal ${reason}, got ${JSON.stringify(frame.result)}`);
  assert.equal(frame.error.reason, reason, frame.error.message);
  return frame.error;
};

test("back, forward and reload walk the tab's history without the debugger and never focus", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const focused = browser.focusedWindowId();
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  // Nothing behind, nothing ahead: refused, naming the page and what to do instead.
  assert.match(refused(await act({ kind: "back" }), "no_history").message, /https:\/\/a\.example\/.*no earlier entry.*Navigate/);
  assert.match(refused(await act({ kind: "forward" }), "no_history").message, /no later entry.*Navigate/);
  assert.equal(browser.tab(a.tabId).url, "https://a.example/", "a refused move loads nothing");

  ok(await act({ kind: "navigate", url: "https://a.example/next" }));
  ok(await act({ kind: "back" }));
  assert.equal(browser.tab(a.tabId).url, "https://a.example/", "loaded before the reply");
  assert.equal(browser.tab(a.tabId).status, "complete");
  ok(await act({ kind: "forward" }));
  assert.equal(browser.tab(a.tabId).url, "https://a.example/next");
  const reloads = browser.calls.filter((c) => c.api === "tabs.reload").length;
  ok(await act({ kind: "reload" }));
  assert.equal(browser.calls.filter((c) => c.api === "tabs.reload").length, reloads + 1);
  assert.equal(browser.tab(a.tabId).url, "https://a.example/next");
  assert.equal(browser.tab(a.tabId).status, "complete");
  refused(await act({ kind: "forward" }), "no_history");

  assert.deepEqual(
    browser.calls.filter((c) => ["tabs.goBack", "tabs.goForward", "tabs.reload"].includes(c.api)).map((c) => [c.api, c.args]),
    [
      ["tabs.goBack", { tabId: a.tabId }],
      ["tabs.goForward", { tabId: a.tabId }],
      ["tabs.goBack", { tabId: a.tabId }],
      ["tabs.goForward", { tabId: a.tabId }],
      ["tabs.reload", { tabId: a.tabId }],
      ["tabs.goForward", { tabId: a.tabId }],
    ],
  );
  assert.equal(browser.calls.filter((c) => c.api.startsWith("debugger.")).length, 0, "no debugger for the history");
  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
});

test("history steps take no fields and are validated like every step", async () => {
  const env = await setup();
  const { user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  // Unknown fields are dropped, not passed on.
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "reload", url: "https://elsewhere.example/" } }));
  assert.equal(env.browser.tab(a.tabId).url, "https://a.example/");
  // Another owner's tab is not walked back.
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  const other = await env.cmd("act", { key: "k", owner: "uid-a", tabId: b.tabId, step: { kind: "back" } });
  assert.equal(other.ok, false);
});
