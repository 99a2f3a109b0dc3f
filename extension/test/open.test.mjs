// open / adopt bookkeeping, event reporting and filtering.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, settle, ok } from "./harness.mjs";
import { PENDING_TTL_MS } from "../background.js";

test("a tabs.onCreated that fires before tabs.create resolves is still owned, and recorded before the reply", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  // Watch the order: the fake fires onCreated inside tabs.create, before its promise resolves.
  const order = [];
  chrome.tabs.onCreated.addListener((t) => order.push(`onCreated:${t.id}`));
  const origCreate = chrome.tabs.create;
  chrome.tabs.create = async (p) => {
    const t = await origCreate(p);
    order.push(`resolved:${t.id}`);
    return t;
  };

  // Assert the record exists at the moment the result frame is sent.
  const sent = env.sock.send.bind(env.sock);
  let recordAtReply;
  env.sock.send = (data) => {
    const f = JSON.parse(data);
    if (f.type === "result") recordAtReply = chrome.storage.session.snapshot()[`rec:${f.result?.tabId}`];
    sent(data);
  };

  const r = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/x", windowId: user.windowId }));
  await env.settle();
  assert.deepEqual(order, [`onCreated:${r.tabId}`, `resolved:${r.tabId}`]);
  assert.deepEqual(
    { owner: recordAtReply.owner, tabId: recordAtReply.tabId, windowId: recordAtReply.windowId, createdWindow: recordAtReply.createdWindow },
    { owner: "uid-a", tabId: r.tabId, windowId: user.windowId, createdWindow: false },
  );
  const created = env.sock.events("tabCreated").filter((e) => e.tab.id === r.tabId);
  assert.equal(created.length, 1);
  assert.equal(created[0].owner, "uid-a");
  assert.equal(created[0].tab.url, "https://a.example/x");

  // Same for a new window: windows.onCreated and tabs.onCreated both precede the resolve.
  const w = ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true }));
  await env.settle();
  assert.equal(env.sock.events("tabCreated").find((e) => e.tab.id === w.tabId)?.owner, "uid-w");
  assert.equal(env.sock.events("windowCreated").find((e) => e.window.id === w.windowId)?.window.focused, false);
  // A user tab carries no owner.
  const userTab = browser.openTab(user.windowId, { url: "https://user.example/" });
  await env.settle();
  assert.equal("owner" in env.sock.events("tabCreated").find((e) => e.tab.id === userTab), false);
});

test("a worker that died mid-open: the pending marker lets the next worker own the tab", async () => {
  const env = await setup({ connect: false });
  const { browser, user, chrome, clock } = env;
  // The previous worker wrote its marker and called tabs.create, then died before recording.
  // (maxTabId: the largest tab id that worker had seen; here the user's tab, the only one.)
  await chrome.storage.session.set({
    "pending:uid-a": { owner: "uid-a", url: "https://a.example/", windowId: user.windowId, newWindow: false, maxTabId: user.tabId, at: clock.now() },
    "pending:uid-old": { owner: "uid-old", url: "https://old.example/", windowId: user.windowId, newWindow: false, maxTabId: user.tabId, at: clock.now() - PENDING_TTL_MS - 1 },
  });
  const tabId = browser.openTab(user.windowId, { url: "https://a.example/", committed: false, active: false });
  const stale = browser.openTab(user.windowId, { url: "https://old.example/", committed: false, active: false });
  await settle(env.worker);
  const s = chrome.storage.session.snapshot();
  assert.equal(s[`rec:${tabId}`]?.owner, "uid-a");
  assert.equal(s["pending:uid-a"], undefined, "marker consumed");
  assert.equal(s[`rec:${stale}`], undefined, "an expired marker claims nothing");

  // start() drops the expired marker.
  await env.worker.start();
  env.sock = await env.host.waitSocket();
  await env.host.handshake(env.sock);
  await settle(env.worker);
  assert.equal(chrome.storage.session.snapshot()["pending:uid-old"], undefined);
  // and cleanup closes the claimed tab
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [tabId] });
  assert.equal(browser.tab(tabId), undefined);
  assert.ok(browser.tab(stale), "the unclaimed tab is left alone");
});

test("open is idempotent per owner and never focuses", async () => {
  const env = await setup();
  const { browser, user } = env;
  const focusedBefore = browser.focusedWindowId();
  const activeBefore = browser.tabsIn(user.windowId).find((t) => t.active).id;

  const first = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const again = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.deepEqual(again, first);
  // Concurrent retries too.
  const [c1, c2] = await Promise.all([
    env.cmd("open", { owner: "uid-c", url: "https://c.example/", windowId: user.windowId }),
    env.cmd("open", { owner: "uid-c", url: "https://c.example/", windowId: user.windowId }),
  ]);
  assert.deepEqual(ok(c1), ok(c2));
  const win = ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true }));
  assert.deepEqual(ok(await env.cmd("open", { owner: "uid-w", url: "https://w.example/", newWindow: true })), win);

  assert.equal(browser.tabIds().length, 4, "user tab + one tab per owner");
  assert.equal(browser.windowIds().length, 2);
  for (const c of browser.calls.filter((c) => c.api === "tabs.create")) assert.equal(c.args.active, false);
  for (const c of browser.calls.filter((c) => c.api === "windows.create")) assert.equal(c.args.focused, false);
  assert.equal(browser.focusedWindowId(), focusedBefore, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, activeBefore, "the user's active tab stays active");

  // A gone tab is not "live": open creates a new one.
  browser.closeTab(first.tabId);
  const reopened = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.notEqual(reopened.tabId, first.tabId);
  assert.ok(browser.tab(reopened.tabId));
});

test("open refuses bad arguments and creates nothing", async () => {
  const env = await setup();
  const { browser, user } = env;
  const before = browser.tabIds();
  const cases = [
    [{ url: "https://a.example/", windowId: user.windowId }, "owner_required"],
    [{ owner: "o", url: "javascript:alert(1)", windowId: user.windowId }, "invalid_args"],
    [{ owner: "o", url: "chrome://settings", windowId: user.windowId }, "invalid_args"],
    [{ owner: "o", url: "file:///etc/passwd", windowId: user.windowId }, "invalid_args"],
    [{ owner: "o", url: "https://a.example/" }, "invalid_args"],
    [{ owner: "o", url: "https://a.example/", windowId: 777 }, "not_found"],
  ];
  for (const [args, reason] of cases) {
    const r = await env.cmd("open", args);
    assert.equal(r.ok, false, JSON.stringify(args));
    assert.equal(r.error.reason, reason, JSON.stringify(args));
  }
  assert.deepEqual(browser.tabIds(), before);
  assert.equal(Object.keys(env.chrome.storage.session.snapshot()).filter((k) => k.startsWith("pending:")).length, 0);
});

test("incognito and browser-internal tabs are never reported, in observe or in events", async () => {
  const env = await setup();
  const { browser, user } = env;
  const inc = browser.openWindow({ url: "https://secret.example/", incognito: true, focused: false });
  const settings = browser.openTab(user.windowId, { url: "chrome://settings/" });
  const hidden = [
    "chrome-extension://abc/page.html",
    "devtools://devtools/bundled/inspector.html",
    "chrome-untrusted://terminal/",
    "edge://settings",
    "view-source:https://a.example/",
  ].map((url) => browser.openTab(user.windowId, { url }));
  const blank = browser.openTab(user.windowId, { url: "about:blank" });
  const loading = browser.openTab(user.windowId, { url: "chrome://newtab/", committed: false });
  const visible = browser.openTab(user.windowId, { url: "https://ok.example/" });
  browser.navigate(visible, "chrome://history/"); // navigates into a hidden page
  await env.settle();

  const obs = ok(await env.cmd("observe"));
  assert.deepEqual(obs.windows, [{ id: user.windowId, type: "normal", focused: true }]);
  // `visible` is now on chrome://history, so it is hidden too.
  assert.deepEqual(obs.tabs.map((t) => t.id), [user.tabId, blank]);
  const ids = new Set(obs.tabs.map((t) => t.id));
  for (const id of [inc.tabId, settings, loading, visible, ...hidden]) assert.ok(!ids.has(id), `tab ${id} must not be reported`);

  const reported = env.sock.sent.filter((f) => f.type === "event");
  const mentions = (id) => reported.some((e) => e.tab?.id === id);
  for (const id of [inc.tabId, settings, loading, ...hidden]) assert.ok(!mentions(id), `event for hidden tab ${id}`);
  assert.ok(!reported.some((e) => e.event === "windowCreated" && e.window.id === inc.windowId), "incognito window event");
  assert.ok(mentions(blank), "about:blank is reported");
  // After navigating to chrome://history the tab's updates are no longer reported.
  const lastUpdate = env.sock.events("tabUpdated").filter((e) => e.tab.id === visible).at(-1);
  assert.ok(!lastUpdate || !lastUpdate.tab.url.startsWith("chrome://"));
  // Tab shape
  const t = obs.tabs.find((x) => x.id === user.tabId);
  assert.deepEqual(Object.keys(t).sort(), ["active", "id", "index", "title", "url", "windowId"]);
});

test("the tab shape follows the protocol: openerTabId when present, url falls back to pendingUrl", async () => {
  const env = await setup();
  const { browser, user } = env;
  const child = browser.openTab(user.windowId, { url: "https://child.example/", openerTabId: user.tabId, committed: false });
  await env.settle();
  const ev = env.sock.events("tabCreated").find((e) => e.tab.id === child);
  assert.deepEqual(ev.tab, {
    id: child,
    windowId: user.windowId,
    openerTabId: user.tabId,
    url: "https://child.example/",
    title: "",
    active: true,
    index: 1,
  });
  // onUpdated reported only for url/title/status changes
  const upd = env.sock.events("tabUpdated").filter((e) => e.tab.id === child);
  assert.equal(upd.length, 1);
  assert.equal(upd[0].tab.title, "Title of https://child.example/");
  env.browser.events.tabsUpdated.dispatch(child, { favIconUrl: "x" }, browser.tab(child));
  await env.settle();
  assert.equal(env.sock.events("tabUpdated").filter((e) => e.tab.id === child).length, 1);
  browser.closeTab(child);
  await env.settle();
  assert.deepEqual(env.sock.events("tabRemoved").at(-1), { type: "event", event: "tabRemoved", tabId: child, windowId: user.windowId });
});

test("records and sessions ops", async () => {
  const env = await setup();
  const { user, chrome } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.deepEqual(ok(await env.cmd("records")), {
    records: [{ owner: "uid-a", tabId: a.tabId, windowId: user.windowId, createdWindow: false, kind: "opened" }],
  });
  const sessions = [
    {
      namespace: "default",
      name: "fill-form",
      thread: "thread-42",
      purpose: "fill the contact form",
      phase: "Active",
      windows: [{ name: "fill-form-compose", tabId: "123", source: "Spawned", disposition: "", phase: "Open", unacknowledged: true, x: 1 }],
      extra: "dropped",
    },
  ];
  assert.deepEqual(ok(await env.cmd("sessions", { sessions })), {});
  const stored = chrome.storage.session.snapshot().sessions;
  assert.equal(stored.length, 1);
  assert.equal(stored[0].extra, undefined);
  assert.deepEqual(stored[0].windows[0], {
    name: "fill-form-compose",
    tabId: "123",
    source: "Spawned",
    disposition: "",
    phase: "Open",
    unacknowledged: true,
  });
  const bad = await env.cmd("sessions", { sessions: "nope" });
  assert.equal(bad.error.reason, "invalid_args");
});

test("an unknown op is refused with unknown_op", async () => {
  const env = await setup();
  const before = env.browser.tabIds();
  for (const op of ["evaluate", "cdp", "", undefined]) {
    const r = await env.cmd(op);
    assert.equal(r.ok, false);
    assert.equal(r.error.reason, "unknown_op");
  }
  assert.deepEqual(env.browser.tabIds(), before);
});

test("open's pending marker stores the largest tab id the worker had seen", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const other = browser.openTab(user.windowId, { url: "https://news.example/", active: false });
  let marker;
  const origCreate = chrome.tabs.create;
  chrome.tabs.create = async (p) => {
    marker = chrome.storage.session.snapshot()["pending:uid-a"];
    return origCreate(p);
  };
  const r = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.equal(marker?.maxTabId, other, "the largest id that existed when the marker was stored");
  assert.ok(r.tabId > marker.maxTabId);
});

test("a pending marker never claims a tab with an opener or an id it had already seen", async () => {
  const env = await setup({ connect: false });
  const { browser, user, chrome, clock } = env;
  const url = "https://a.example/";
  // The user's own tab with the same url, created before the marker was stored.
  const early = browser.openTab(user.windowId, { url, active: false });
  await settle(env.worker);
  await chrome.storage.session.set({
    "pending:uid-a": { owner: "uid-a", url, windowId: user.windowId, newWindow: false, maxTabId: early, at: clock.now() },
  });
  // The old tab's onCreated arrives late (delivered to the next worker): not claimed.
  browser.events.tabsCreated.dispatch(browser.tab(early));
  // Another session's spawn with the same url (a page called window.open): not claimed.
  const spawn = browser.openTab(user.windowId, { url, openerTabId: user.tabId, active: false, committed: false });
  await settle(env.worker);
  let s = chrome.storage.session.snapshot();
  assert.equal(s[`rec:${early}`], undefined, "the user's older tab is not claimed");
  assert.equal(s[`rec:${spawn}`], undefined, "a spawn is not claimed");
  assert.ok(s["pending:uid-a"], "the marker waits for its own tab");
  // A marker of an older build, without maxTabId, claims nothing.
  await chrome.storage.session.set({
    "pending:uid-legacy": { owner: "uid-legacy", url: "https://legacy.example/", windowId: user.windowId, newWindow: false, at: clock.now() },
  });
  const legacy = browser.openTab(user.windowId, { url: "https://legacy.example/", active: false, committed: false });
  // The tab the interrupted open created: no opener, a fresh id. Claimed.
  const mine = browser.openTab(user.windowId, { url, active: false, committed: false });
  await settle(env.worker);
  s = chrome.storage.session.snapshot();
  assert.equal(s[`rec:${legacy}`], undefined);
  assert.equal(s[`rec:${mine}`]?.owner, "uid-a");
  assert.equal(s[`rec:${mine}`]?.kind, "opened");

  await env.worker.start();
  env.sock = await env.host.waitSocket();
  await env.host.handshake(env.sock);
  await settle(env.worker);
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [mine] });
  assert.ok(browser.tab(early) && browser.tab(spawn) && browser.tab(legacy), "nobody else's tab closed");
});
