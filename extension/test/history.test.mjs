// The `act` command's history steps: back, forward and reload move the tab through its own
// history with chrome.tabs (never the debugger, never activating anything), wait until the
// document has loaded, and refuse (no_history) a move with no entry that way.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok, refused } from "./harness.mjs";

// The page behind the debugger: Page events on, no dialog showing (the history itself is
// fake-chrome's, as Chrome answers Page.getNavigationHistory).
function quietPage(browser) {
  browser.setPage(async (tabId, method) => {
    if (method === "Page.enable") return {};
    if (method === "Page.handleJavaScriptDialog") throw new Error("No dialog is showing");
    throw new Error(`unexpected ${method}`);
  });
}

test("back, forward and reload walk the tab's history, wait for the load and never focus", async () => {
  const env = await setup();
  const { browser, user } = env;
  quietPage(browser);
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

  // Back and forward: the history read and one entry loaded over the debugger, nothing else
  // (no tab activated, no input); reload: chrome.tabs.reload alone.
  assert.deepEqual(
    browser.calls
      .filter((c) => c.api === "tabs.reload" || (c.api === "debugger.sendCommand" && /^Page\.(getNavigationHistory|navigateToHistoryEntry)$/.test(c.args.method)))
      .map((c) => (c.api === "tabs.reload" ? ["tabs.reload", c.args] : [c.args.method, c.args.params])),
    [
      ["Page.getNavigationHistory", {}], // back, refused
      ["Page.getNavigationHistory", {}], // forward, refused
      ["Page.getNavigationHistory", {}],
      ["Page.navigateToHistoryEntry", { entryId: 1 }],
      ["Page.getNavigationHistory", {}],
      ["Page.navigateToHistoryEntry", { entryId: 2 }],
      ["tabs.reload", { tabId: a.tabId }],
      ["Page.getNavigationHistory", {}], // forward, refused
    ],
  );
  assert.equal(browser.calls.filter((c) => c.api === "debugger.sendCommand" && c.args.method.startsWith("Input.")).length, 0, "no input");
  assert.deepEqual(browser.attachedTabs(), [], "the debugger is detached, also after a refusal");
  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
});

test("history steps take no fields and are validated like every step", async () => {
  const env = await setup();
  const { user } = env;
  quietPage(env.browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  // Unknown fields are dropped, not passed on.
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "reload", url: "https://elsewhere.example/" } }));
  assert.equal(env.browser.tab(a.tabId).url, "https://a.example/");
  // Another owner's tab is not walked back.
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  const other = await env.cmd("act", { key: "k", owner: "uid-a", tabId: b.tabId, step: { kind: "back" } });
  assert.equal(other.ok, false);
});
