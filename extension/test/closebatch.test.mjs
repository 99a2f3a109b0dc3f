// Closing a session's pages concurrently (docs/design.md "Cleanup", the extension's batch):
// the agent sends one `close` per page, all at once; the worker decides them in the ownership
// queue as a batch (the last-tab rule included) and runs the removes concurrently, outside it.
// Every test asserts the real state of the fake browser afterwards.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok } from "./harness.mjs";

/** Opens n tabs in windowId, each under its own owner (a session's windows): [{owner, tabId}]. */
async function openOwned(env, prefix, n, windowId) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const owner = `${prefix}-${i}`;
    const r = ok(await env.cmd("open", { owner, url: `https://${prefix}.example/${i}`, windowId }));
    out.push({ owner, tabId: r.tabId });
  }
  await env.settle();
  return out;
}

/**
 * Wraps chrome.tabs.remove: counts the removes in flight (max: the most at once) and, with
 * hold(), keeps the removes of the given tabs pending until release().
 */
function watchRemoves(chrome) {
  const orig = chrome.tabs.remove;
  const w = { inFlight: 0, max: 0, held: new Set(), gate: null, open: null, calls: 0 };
  w.hold = (ids) => {
    w.held = new Set(ids);
    w.gate = new Promise((r) => (w.open = r));
  };
  w.release = () => w.open?.();
  chrome.tabs.remove = async (ids) => {
    w.calls++;
    w.inFlight++;
    w.max = Math.max(w.max, w.inFlight);
    try {
      const list = Array.isArray(ids) ? ids : [ids];
      if (w.gate && list.some((id) => w.held.has(id))) await w.gate;
      return await orig(ids);
    } finally {
      w.inFlight--;
    }
  };
  return w;
}

const blanks = (browser, windowId) => browser.tabsIn(windowId).filter((t) => (t.pendingUrl ?? t.url) === "about:blank");

test("a session's pages in the user's window close concurrently; the user's tab stays, no blank tab", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const mine = await openOwned(env, "s", 6, user.windowId);
  const removes = watchRemoves(chrome);

  const replies = await Promise.all(mine.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  for (const r of replies) assert.deepEqual(ok(r), { closed: true });

  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId], "only the user's tab is left");
  assert.equal(blanks(browser, user.windowId).length, 0, "the user's tab keeps the window: no blank tab");
  assert.equal(removes.calls, mine.length);
  assert.ok(removes.max > 1, `the removes ran concurrently (at most ${removes.max} at once)`);
  assert.deepEqual(ok(await env.cmd("records")).records, []);
  assert.deepEqual(browser.attachedTabs(), [], "every close's debugger session is detached");
});

test("a user window holding only a session's pages keeps exactly one blank tab", async () => {
  const env = await setup();
  const { browser, user } = env;
  const mine = await openOwned(env, "s", 5, user.windowId);
  browser.closeTab(user.tabId); // the user closes their own tab: only owned tabs are left
  await env.settle();

  const replies = await Promise.all(mine.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  for (const r of replies) assert.deepEqual(ok(r), { closed: true });

  assert.ok(browser.window(user.windowId), "the user's window survives");
  const left = browser.tabsIn(user.windowId);
  assert.equal(left.length, 1);
  assert.equal(left[0].pendingUrl ?? left[0].url, "about:blank");
  const blankCreates = browser.calls.filter((c) => c.api === "tabs.create" && c.args.url === "about:blank");
  assert.equal(blankCreates.length, 1, "one placeholder for the whole batch");
  assert.equal(blankCreates[0].args.active, false);
  assert.equal(blankCreates[0].args.windowId, user.windowId);
});

test("a batch never closes a tab its owner does not own; the rest of the batch closes", async () => {
  const env = await setup();
  const { browser, user } = env;
  const mine = await openOwned(env, "s", 3, user.windowId);
  const other = ok(await env.cmd("open", { owner: "other", url: "https://other.example/", windowId: user.windowId }));
  await env.settle();

  const replies = await Promise.all([
    ...mine.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })),
    env.cmd("close", { owner: mine[0].owner, tabId: user.tabId }), // the user's tab
    env.cmd("close", { owner: mine[1].owner, tabId: other.tabId }), // another owner's tab
  ]);
  for (const r of replies.slice(0, 3)) assert.deepEqual(ok(r), { closed: true });
  for (const r of replies.slice(3)) {
    assert.equal(r.ok, false);
    assert.equal(r.error.reason, "not_owned");
  }
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId, other.tabId]);
});

test("two sessions sharing a window clean up concurrently: the later decision sees the earlier removes in flight and keeps one blank tab", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const a = await openOwned(env, "a", 3, user.windowId);
  const b = await openOwned(env, "b", 3, user.windowId);
  browser.closeTab(user.tabId);
  await env.settle();
  const removes = watchRemoves(chrome);

  // Session a's removes are held in flight while session b's batch is decided.
  removes.hold(a.map((x) => x.tabId));
  const ra = Promise.all(a.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  // (session a's batch leaves b's three tabs: no placeholder yet)
  for (let i = 0; i < 200 && removes.inFlight < a.length; i++) await new Promise((r) => setImmediate(r));
  assert.equal(removes.inFlight, a.length, "session a's removes are in flight");
  assert.equal(blanks(browser, user.windowId).length, 0);
  const rb = await Promise.all(b.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  for (const r of rb) assert.deepEqual(ok(r), { closed: true });
  assert.equal(blanks(browser, user.windowId).length, 1, "b's batch counted a's tabs as gone and opened the placeholder");
  removes.release();
  for (const r of await ra) assert.deepEqual(ok(r), { closed: true });

  assert.ok(browser.window(user.windowId), "the window survives");
  const left = browser.tabsIn(user.windowId);
  assert.equal(left.length, 1);
  assert.equal(left[0].pendingUrl ?? left[0].url, "about:blank");
  assert.deepEqual(ok(await env.cmd("records")).records, []);
});

test("two sessions' cleanups sent at once in one window: both close, one blank tab", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = await openOwned(env, "a", 4, user.windowId);
  const b = await openOwned(env, "b", 4, user.windowId);
  browser.closeTab(user.tabId);
  await env.settle();

  const replies = await Promise.all([...a, ...b].map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  for (const r of replies) assert.deepEqual(ok(r), { closed: true });
  const left = browser.tabsIn(user.windowId);
  assert.equal(left.length, 1);
  assert.equal(left[0].pendingUrl ?? left[0].url, "about:blank");
  assert.equal(browser.calls.filter((c) => c.api === "tabs.create" && c.args.url === "about:blank").length, 1);
});

test("a tab the user closes mid-batch answers closed:false; the others close, the window keeps the user's tab", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const mine = await openOwned(env, "s", 4, user.windowId);
  const victim = mine[2].tabId;
  // The user closes one of the session's tabs after the batch was decided, as its removes start.
  const orig = chrome.tabs.remove;
  let first = true;
  chrome.tabs.remove = async (ids) => {
    if (first) {
      first = false;
      browser.closeTab(victim);
    }
    return orig(ids);
  };

  const replies = await Promise.all(mine.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  replies.forEach((r, i) => assert.deepEqual(ok(r), { closed: mine[i].tabId !== victim }, `tab ${mine[i].tabId}`));
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId]);
  assert.equal(blanks(browser, user.windowId).length, 0);
  assert.deepEqual(ok(await env.cmd("records")).records, []);
  // Asked again (the agent retrying from a stale view): nothing to do, nothing refused.
  for (const { owner, tabId } of mine) assert.deepEqual(ok(await env.cmd("close", { owner, tabId })), { closed: false });
});

test("the same close asked twice while in flight is one remove and one answer", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const [t] = await openOwned(env, "s", 1, user.windowId);
  const removes = watchRemoves(chrome);
  removes.hold([t.tabId]);
  const first = env.cmd("close", t);
  for (let i = 0; i < 200 && removes.inFlight < 1; i++) await new Promise((r) => setImmediate(r));
  const again = env.cmd("close", t);
  for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
  removes.release();
  assert.deepEqual(ok(await first), { closed: true });
  assert.deepEqual(ok(await again), { closed: true });
  assert.equal(removes.calls, 1);
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("a remove Chrome refuses mid-batch keeps that tab and its record; the others close; the retry closes it", async () => {
  const env = await setup();
  const { browser, user } = env;
  const mine = await openOwned(env, "s", 3, user.windowId);
  browser.failNext("tabs.remove", 1, "Tabs cannot be edited right now (user may be dragging a tab).");
  const replies = await Promise.all(mine.map(({ owner, tabId }) => env.cmd("close", { owner, tabId })));
  const failed = replies.filter((r) => !r.ok);
  assert.equal(failed.length, 1);
  assert.equal(failed[0].error.reason, "failed");
  assert.match(failed[0].error.message, /dragging/);
  const kept = ok(await env.cmd("records")).records;
  assert.equal(kept.length, 1, "the refused tab is still recorded");
  assert.ok(browser.tab(kept[0].tabId), "and still open");
  assert.deepEqual(ok(await env.cmd("close", { owner: kept[0].owner, tabId: kept[0].tabId })), { closed: true });
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});
