// Ownership-based cleanup: the semantics of docs/extension-protocol.md `close` / `cleanup`.
// Every test asserts the real state of the fake browser afterwards.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, settle, createFakeHost, ok } from "./harness.mjs";

const refused = (frame, reason) => {
  assert.equal(frame.ok, false, `expected refusal ${reason}, got ${JSON.stringify(frame.result)}`);
  assert.equal(frame.error.reason, reason);
  assert.equal(typeof frame.error.message, "string");
};

test("cleaning one owner keeps another owner's tab and a user tab in the same window", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  assert.equal(a.windowId, user.windowId);
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId, a.tabId, b.tabId]);

  const res = ok(await env.cmd("cleanup", { owner: "uid-a" }));
  assert.deepEqual(res, { closed: [a.tabId] });
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId, b.tabId]);
  // Only uid-b's record remains.
  assert.deepEqual(ok(await env.cmd("records")).records, [
    { owner: "uid-b", tabId: b.tabId, windowId: user.windowId, createdWindow: false, kind: "opened" },
  ]);
});

test("a fresh worker (re-imported module, same storage) cleans up from retained session records", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const a1 = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/1", windowId: user.windowId }));
  const aw = ok(await env.cmd("open", { owner: "uid-w", url: "https://a.example/w", newWindow: true }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  await env.settle();

  // Chrome terminates the worker: listeners, socket and timers are gone; tabs and
  // chrome.storage.session survive.
  browser.killWorker();
  env.sock.drop();
  env.clock.clearAll();
  assert.equal(browser.listenerCount(), 0);

  // Chrome starts a new worker by evaluating the module again with the real `chrome` global.
  const host2 = createFakeHost();
  globalThis.chrome = chrome;
  globalThis.WebSocket = host2.WebSocket;
  let mod;
  try {
    mod = await import(`../background.js?fresh-context=${Date.now()}`);
  } finally {
    delete globalThis.chrome;
    delete globalThis.WebSocket;
  }
  assert.ok(mod.worker, "module auto-started with the chrome global");
  assert.ok(browser.listenerCount() >= 9, "all listeners registered during the first turn");
  const sock = await host2.waitSocket();
  try {
    await host2.handshake(sock, 2); // the new worker proves it holds the stored key
    await settle(mod.worker);

    const recs = ok(await host2.command(sock, "records")).records;
    assert.deepEqual(recs.map((r) => r.owner).sort(), ["uid-a", "uid-b", "uid-w"]);

    assert.deepEqual(ok(await host2.command(sock, "cleanup", { owner: "uid-a" })), { closed: [a1.tabId] });
    assert.deepEqual(ok(await host2.command(sock, "cleanup", { owner: "uid-w" })), { closed: [aw.tabId] });
    await settle(mod.worker);
    // uid-w's window was created for it, so its last tab takes the window along.
    assert.equal(browser.window(aw.windowId), undefined);
    assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId, b.tabId]);
  } finally {
    // This worker runs on real timers: 4401 ("do not reconnect") stops its ping and retries.
    sock.serverClose(4401, "unauthorized");
    await settle(mod.worker);
  }
});

test("repeating cleanup removes nothing more, and a tab the user already closed is harmless", async () => {
  const env = await setup();
  const { browser, user } = env;
  const t1 = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/1", windowId: user.windowId }));
  // A page of uid-a spawns a tab; the host adopts it under its own window's owner, uid-s.
  const spawned = browser.openTab(user.windowId, { url: "https://a.example/spawn", openerTabId: t1.tabId, active: false });
  ok(await env.cmd("adopt", { owner: "uid-s", tabId: spawned, parent: "uid-a" }));
  const userTab2 = browser.openTab(user.windowId, { url: "https://news.example/" });

  browser.closeTab(t1.tabId); // the user closes one owned tab by hand
  await env.settle();

  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [] });
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-s" })), { closed: [spawned] });
  const after = browser.tabIds();
  assert.deepEqual(after, [user.tabId, userTab2]);

  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [] });
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-s" })), { closed: [] });
  assert.deepEqual(browser.tabIds(), after, "second cleanup removed nothing");
  assert.deepEqual(ok(await env.cmd("records")).records, []);
});

test("close of a tab already gone answers closed:false and drops the record", async () => {
  const env = await setup();
  const { browser, user } = env;
  const t = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  browser.closeTab(t.tabId);
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: t.tabId })), { closed: false });
  assert.deepEqual(ok(await env.cmd("records")).records, []);
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("two owners cleaning their final tabs concurrently leave a blank tab; the window survives", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  browser.closeTab(user.tabId); // now the window holds only the two owned tabs
  await env.settle();

  // Both requests arrive before either is answered.
  const [ra, rb] = await Promise.all([env.cmd("cleanup", { owner: "uid-a" }), env.cmd("cleanup", { owner: "uid-b" })]);
  assert.deepEqual(ok(ra), { closed: [a.tabId] });
  assert.deepEqual(ok(rb), { closed: [b.tabId] });

  assert.ok(browser.window(user.windowId), "the user's window survives");
  const left = browser.tabsIn(user.windowId);
  assert.equal(left.length, 1);
  assert.equal(left[0].url || left[0].pendingUrl, "about:blank");
  const blankCreate = browser.calls.filter((c) => c.api === "tabs.create" && c.args.url === "about:blank");
  assert.equal(blankCreate.length, 1);
  assert.equal(blankCreate[0].args.active, false);
  assert.equal(blankCreate[0].args.windowId, user.windowId);
});

test("close of the last tab in the owner's own window closes that window, no blank tab", async () => {
  const env = await setup();
  const { browser, user } = env;
  const w = ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true }));
  assert.equal(w.createdWindow, true);
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-w", tabId: w.tabId })), { closed: true });
  assert.equal(browser.window(w.windowId), undefined);
  assert.deepEqual(browser.windowIds(), [user.windowId]);
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("an owned tab torn off into another window keeps that window alive (blank tab)", async () => {
  // createdWindow covers only the window created for the owner, not wherever the tab went.
  const env = await setup();
  const { browser } = env;
  const w = ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true }));
  const torn = browser.moveTab(w.tabId, "new"); // the owner's window closes; the tab lives on alone
  await env.settle();
  assert.equal(browser.window(w.windowId), undefined);
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-w", tabId: w.tabId })), { closed: true });
  const left = browser.tabsIn(torn);
  assert.equal(left.length, 1, "the window the user made survives with a blank tab");
  assert.equal(left[0].pendingUrl ?? left[0].url, "about:blank");
});

test("cleanup or close without an owner is refused (owner_required) and nothing closes", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const before = browser.tabIds();
  refused(await env.cmd("cleanup", {}), "owner_required");
  refused(await env.cmd("cleanup", { owner: "" }), "owner_required");
  refused(await env.cmd("close", { tabId: a.tabId }), "owner_required");
  assert.deepEqual(browser.tabIds(), before);
});

test("closing a tab not owned by the caller is refused (not_owned) and nothing closes", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const before = browser.tabIds();
  refused(await env.cmd("close", { owner: "uid-a", tabId: user.tabId }), "not_owned"); // the user's tab
  refused(await env.cmd("close", { owner: "uid-b", tabId: a.tabId }), "not_owned"); // another owner's tab
  assert.deepEqual(browser.tabIds(), before);
  assert.equal(browser.calls.filter((c) => c.api === "tabs.remove").length, 0);
});

test("close is idempotent: closing again, or closing a tab that no longer exists, answers closed:false", async () => {
  // Found in real Chromium: the agent re-sent close from a stale view after the first close had
  // dropped the record; not_owned there left its window stuck in Closing.
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId })), { closed: true });
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId })), { closed: false });
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: 99999 })), { closed: false }); // never existed
  assert.deepEqual(browser.tabIds(), [user.tabId]);
  // A live tab that is not recorded under the owner is still refused.
  refused(await env.cmd("close", { owner: "uid-a", tabId: user.tabId }), "not_owned");
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("a failed request is reported and the queue keeps going", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  browser.failNext("tabs.query");
  const [bad, good] = await Promise.all([env.cmd("cleanup", { owner: "uid-a" }), env.cmd("cleanup", { owner: "uid-a" })]);
  assert.equal(bad.ok, false);
  assert.equal(bad.error.reason, "failed");
  assert.deepEqual(ok(good), { closed: [a.tabId] });
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("adopt records a spawned tab; a spawn that came with its own popup window is closed with it", async () => {
  const env = await setup();
  const { browser, user } = env;
  const opener = ok(await env.cmd("open", { owner: "uid-a", url: "https://contacts.example/", windowId: user.windowId }));
  // The page spawns a Gmail compose popup window (Chrome reports the contacts tab as opener).
  const compose = browser.openWindow({ url: "https://mail.example.com/compose", type: "popup", focused: false, openerTabId: opener.tabId });
  await env.settle();
  assert.deepEqual(ok(await env.cmd("adopt", { owner: "uid-compose", tabId: compose.tabId, parent: "uid-a" })), {
    tabId: compose.tabId,
    windowId: compose.windowId,
    createdWindow: true,
  });
  // adopt of a gone tab: not_found
  refused(await env.cmd("adopt", { owner: "uid-x", tabId: 424242, parent: "uid-a" }), "not_found");
  // adopt of a tab recorded under another owner: in_use
  refused(await env.cmd("adopt", { owner: "uid-x", tabId: opener.tabId, parent: "uid-a" }), "in_use");

  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-compose" })), { closed: [compose.tabId] });
  assert.equal(browser.window(compose.windowId), undefined, "the compose window is gone, not left blank");
  assert.deepEqual(browser.tabIds(), [user.tabId, opener.tabId]);
});

test("adopting a tab that is alone in a pre-existing user window never lets cleanup close the window", async () => {
  const env = await setup();
  const { browser, user } = env;
  // A page of uid-a spawns a tab into the user's window, which existed before the worker:
  // nothing says it was born with the spawn.
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const spawned = browser.openTab(user.windowId, { url: "https://a.example/child", openerTabId: a.tabId, active: false });
  await env.settle();
  ok(await env.cmd("adopt", { owner: "uid-s", tabId: spawned, parent: "uid-a" }));
  // Then the user closes the other tabs: the spawn is alone in the user's window.
  browser.closeTab(user.tabId);
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId })), { closed: true });
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [spawned]);
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-s" })), { closed: [spawned] });
  const left = browser.tabsIn(user.windowId);
  assert.equal(left.length, 1);
  assert.equal(left[0].pendingUrl ?? left[0].url, "about:blank");
});

const DRAGGING = "Tabs cannot be edited right now (user may be dragging a tab).";

test("close while Chrome refuses to remove (user dragging a tab): failed, tab and record kept, the retry closes it", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  browser.failNext("tabs.remove", 1, DRAGGING);
  const r = await env.cmd("close", { owner: "uid-a", tabId: a.tabId });
  refused(r, "failed");
  assert.match(r.error.message, /dragging/);
  assert.ok(browser.tab(a.tabId), "the page is still open");
  assert.deepEqual(ok(await env.cmd("records")).records, [
    { owner: "uid-a", tabId: a.tabId, windowId: user.windowId, createdWindow: false, kind: "opened" },
  ], "still recorded, so it never passes for a user tab");
  assert.equal(chrome.storage.session.snapshot()[`rec:${a.tabId}`]?.owner, "uid-a");
  // A bare retry works once the drag is over.
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId })), { closed: true });
  assert.equal(browser.tab(a.tabId), undefined);
  assert.deepEqual(ok(await env.cmd("records")).records, []);
});

test("cleanup while Chrome refuses one remove: failed, that tab stays recorded, the others close; the retry finishes", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const spawned = browser.openTab(user.windowId, { url: "https://a.example/spawn", openerTabId: a.tabId, active: false });
  await env.settle();
  ok(await env.cmd("adopt", { owner: "uid-s", tabId: spawned, parent: "uid-a" }));
  const w = ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true }));

  browser.failNext("tabs.remove", 1, DRAGGING);
  refused(await env.cmd("cleanup", { owner: "uid-s" }), "failed");
  assert.ok(browser.tab(spawned), "the spawn is still open");
  assert.deepEqual(
    ok(await env.cmd("records")).records.map((r) => [r.owner, r.tabId, r.kind]),
    [["uid-a", a.tabId, "opened"], ["uid-s", spawned, "spawned"], ["uid-w", w.tabId, "opened"]],
  );
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-s" })), { closed: [spawned] });
  assert.equal(browser.tab(spawned), undefined);

  // The owner's own window: the refused remove keeps the window and the record.
  browser.failNext("tabs.remove", 1, DRAGGING);
  refused(await env.cmd("close", { owner: "uid-w", tabId: w.tabId }), "failed");
  assert.ok(browser.window(w.windowId));
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-w" })), { closed: [w.tabId] });
  assert.equal(browser.window(w.windowId), undefined);
  assert.deepEqual(ok(await env.cmd("records")).records.map((r) => r.owner), ["uid-a"]);
});

test("a remove that fails because the tab really is gone answers closed:false and drops the record", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  // The user closes the tab between the worker's get and its remove.
  const origRemove = chrome.tabs.remove;
  chrome.tabs.remove = async (id) => {
    chrome.tabs.remove = origRemove;
    browser.closeTab(id);
    return origRemove(id);
  };
  assert.deepEqual(ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId })), { closed: false });
  assert.deepEqual(ok(await env.cmd("records")).records, []);
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("a failed tab lookup is not 'gone': the record of an open tab is kept", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  browser.failNext("tabs.get", 1);
  refused(await env.cmd("cleanup", { owner: "uid-a" }), "failed");
  assert.ok(browser.tab(a.tabId));
  assert.equal(ok(await env.cmd("records")).records.length, 1);
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [a.tabId] });
});

test("a tab spawned by an owned tab just before it closed is still adopted under that owner; nobody else's", async () => {
  const env = await setup();
  const { browser, user } = env;
  const t1 = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/1", windowId: user.windowId }));
  // The page spawns a popup as its session ends; the host has not adopted it when the
  // session's cleanup closes the opener.
  const spawned = browser.openTab(user.windowId, { url: "https://a.example/compose", openerTabId: t1.tabId, active: false });
  await env.settle();
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [t1.tabId] });
  // Only the closed opener's owner may adopt it, as if its record were still there.
  refused(await env.cmd("adopt", { owner: "uid-x", tabId: spawned, parent: "uid-b" }), "not_observed");
  ok(await env.cmd("adopt", { owner: "uid-s", tabId: spawned, parent: "uid-a" }));
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-s" })), { closed: [spawned] });
  assert.deepEqual(browser.tabIds(), [user.tabId]);
});

test("an unsent draft (beforeunload prompt on remove) closes with its owner's cleanup; the prompt is accepted and the queue goes on", async () => {
  const env = await setup();
  const { browser, user } = env;
  const draft = ok(await env.cmd("open", { owner: "uid-a", url: "https://mail.example/draft", windowId: user.windowId }));
  const other = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  browser.armBeforeUnload(draft.tabId);

  const res = ok(await env.cmd("cleanup", { owner: "uid-a" }));
  assert.deepEqual(res, { closed: [draft.tabId] });
  assert.deepEqual(browser.tabsIn(user.windowId).map((t) => t.id), [user.tabId, other.tabId]);
  assert.equal(browser.promptShowing(draft.tabId), false, "no prompt left showing");
  assert.deepEqual(browser.attachedTabs(), [], "the debugger is detached");
  // The queue was not stalled: the next owner's cleanup runs.
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-b" })), { closed: [other.tabId] });
});

test("a close does not wait for the tab's renderer to answer Page.enable: the remove goes out at once, and a prompt it raises is still answered", async () => {
  const env = await setup();
  const { browser, user } = env;
  const slow = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/slow", windowId: user.windowId }));
  const draft = ok(await env.cmd("open", { owner: "uid-d", url: "https://mail.example/draft", windowId: user.windowId }));
  browser.armBeforeUnload(draft.tabId, { holdEnable: true });
  // The renderer of each tab is busy (or already blocked by a dialog of its own): it
  // never answers a command. The worker's clock does not move in this test, so a close that
  // waited for an answer (or for its step's bound) would never reply.
  browser.setPage(() => new Promise(() => {}));
  const res = await Promise.race([
    Promise.all([env.cmd("cleanup", { owner: "uid-a" }), env.cmd("cleanup", { owner: "uid-d" })]),
    new Promise((resolve) => setTimeout(() => resolve("no reply"), 3000)),
  ]);
  assert.notEqual(res, "no reply", "the cleanup waited for the renderer");
  assert.deepEqual(res.map((f) => ok(f)), [{ closed: [slow.tabId] }, { closed: [draft.tabId] }]);
  assert.deepEqual(browser.tabIds(), [user.tabId]);
  assert.equal(browser.promptShowing(draft.tabId), false, "no prompt left showing");
  const sent = browser.calls.filter((c) => c.api === "debugger.sendCommand" || c.api === "tabs.remove");
  const order = sent.filter((c) => c.api === "tabs.remove" || c.args.target.tabId === slow.tabId).map((c) => c.args.method ?? c.api);
  assert.deepEqual(order.slice(0, 3), ["Page.enable", "Page.handleJavaScriptDialog", "tabs.remove"], "Page events are asked for before the remove");
});
