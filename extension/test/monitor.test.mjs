// The Session Monitor in the browser: the `sessions` command groups each session's owned pages
// in a Chrome tab group titled by its purpose, and nothing else.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok } from "./harness.mjs";
import { desiredGroups, groupTitle, GROUPS_KEY } from "../monitor.js";

const session = (name, purpose, windows) => ({ namespace: "default", name, thread: `t-${name}`, purpose, phase: "Active", windows });
const win = (name, tabId, source = "Open", disposition = "Temporary") => ({ name, tabId: String(tabId), source, disposition, phase: "Open" });

test("desired groups: only owned records (opened, spawned) of the session's windows; titles are purposes, clipped", () => {
  const recs = [
    { tabId: 101, owner: "a", kind: "opened" },
    { tabId: 102, owner: "b", kind: "spawned" },
    { tabId: 103, owner: "c", kind: "bound" },
    { tabId: 104, owner: "d", via: "adopt" }, // an older build's spawned record
  ];
  const d = desiredGroups(
    [session("s1", "fill the contact form", [win("a", 101), win("b", 102, "Spawned", ""), win("c", 103, "Bind"), win("x", 999), win("d", 104)])],
    recs,
  );
  assert.deepEqual([...d.entries()], [["default/s1", { title: "fill the contact form", tabIds: [101, 102, 104] }]]);
  assert.equal(desiredGroups([session("s2", "p", [win("c", 103, "Bind")])], recs).size, 0);
  assert.equal(groupTitle({ purpose: "x".repeat(200) }).length, 80);
  assert.equal(groupTitle({ name: "n" }), "n");
});

test("a session's pages are grouped by purpose; bound, user, popup-window and user-grouped tabs are not; nothing is focused", async () => {
  const env = await setup();
  const { browser, user } = env;
  const other = browser.openWindow({ url: "https://news.example/" }); // the user is reading news: focused
  const focused = browser.focusedWindowId();
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://contacts.example/", windowId: user.windowId }));
  const nw = ok(await env.cmd("open", { owner: "uid-n", url: "https://crm.example/", newWindow: true }));
  const blank = browser.openTab(user.windowId, { url: "https://a.example/next", openerTabId: a.tabId, active: false });
  const compose = browser.openWindow({ url: "https://mail.example.com/compose", type: "popup", focused: false, openerTabId: a.tabId });
  await env.settle();
  ok(await env.cmd("adopt", { owner: "uid-blank", tabId: blank, parent: "uid-a" }));
  ok(await env.cmd("adopt", { owner: "uid-compose", tabId: compose.tabId, parent: "uid-a" }));
  const bound = browser.openTab(user.windowId, { url: "https://docs.example/", active: false });
  await env.settle();
  ok(await env.cmd("bind", { owner: "uid-bound", tabId: bound }));
  const mine = browser.openTab(user.windowId, { url: "https://mine.example/", active: false });
  const activeBefore = env.browser.tabsIn(user.windowId).find((t) => t.active).id;

  const sessions = [
    session("fill-form", "fill the contact form", [
      win("main", a.tabId),
      win("second", nw.tabId),
      win("blank", blank, "Spawned", ""),
      win("compose", compose.tabId, "Spawned", ""),
      win("bound", bound, "Bind", ""),
      win("forged", mine), // the host names a user tab: not recorded, never grouped
    ]),
  ];
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();

  const inUser = browser.tab(a.tabId).groupId;
  assert.notEqual(inUser, -1, "the opened tab is grouped");
  assert.equal(browser.group(inUser).title, "fill the contact form");
  assert.equal(browser.group(inUser).windowId, user.windowId);
  assert.equal(browser.tab(blank).groupId, inUser, "the spawned tab joins its session's group");
  const inNew = browser.tab(nw.tabId).groupId;
  assert.notEqual(inNew, -1);
  assert.notEqual(inNew, inUser, "a group lives in one window: one per window");
  assert.equal(browser.group(inNew).title, "fill the contact form");
  assert.equal(browser.tab(compose.tabId).groupId, -1, "a popup window cannot hold groups");
  assert.equal(browser.tab(bound).groupId, -1, "a bound user tab is never grouped");
  assert.equal(browser.tab(mine).groupId, -1, "an unrecorded tab is never grouped");
  assert.equal(browser.focusedWindowId(), focused, "grouping never focuses");
  assert.equal(env.browser.tabsIn(user.windowId).find((t) => t.active).id, activeBefore, "grouping never activates a tab");
  assert.equal(other.windowId, focused);

  // Published again (a window's phase changed): the same groups, no new ones.
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  assert.equal(browser.tab(a.tabId).groupId, inUser);
  assert.equal(browser.groups().length, 2);

  // The spawned tab is released (disposition Keep, session finished): its record goes, so it
  // leaves the group; the rest stays.
  ok(await env.cmd("release", { owner: "uid-blank", tabId: blank }));
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  assert.equal(browser.tab(blank).groupId, -1, "a released tab is ungrouped");
  assert.equal(browser.tab(a.tabId).groupId, inUser);

  // The session is gone from the list: every tab it had grouped is ungrouped (and empty
  // groups vanish, as in Chrome).
  ok(await env.cmd("sessions", { sessions: [] }));
  await env.settle();
  assert.equal(browser.tab(a.tabId).groupId, -1);
  assert.equal(browser.tab(nw.tabId).groupId, -1);
  assert.deepEqual(browser.groups(), []);
  assert.deepEqual(env.chrome.storage.session.snapshot()[GROUPS_KEY], {});
});

test("a tab the user moved into a group of their own stays there; the worker restarting keeps the groups it made", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://contacts.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  const sessions = [session("s1", "research", [win("a", a.tabId)]), session("s2", "shopping", [win("b", b.tabId)])];
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  const g1 = browser.tab(a.tabId).groupId;
  assert.equal(browser.group(g1).title, "research");
  assert.equal(browser.group(browser.tab(b.tabId).groupId).title, "shopping");

  const usersGroup = browser.userGroup([b.tabId]); // the user regroups b their way
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  assert.equal(browser.tab(b.tabId).groupId, usersGroup, "the user's group wins");

  // A fresh worker (Chrome restarted it) finds the groups in storage and ungroups them later.
  browser.killWorker();
  env.worker = env.newWorker();
  await env.worker.start();
  env.sock = await env.host.waitSocket();
  await env.host.handshake(env.sock);
  await env.settle();
  ok(await env.cmd("sessions", { sessions: [] }));
  await env.settle();
  assert.equal(browser.tab(a.tabId).groupId, -1);
  assert.equal(browser.tab(b.tabId).groupId, usersGroup, "never ungrouped from the user's own group");
});

test("grouping failures never fail the sessions command", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://contacts.example/", windowId: user.windowId }));
  browser.failNext("tabs.group", 1, "Tabs cannot be edited right now (user may be dragging a tab).");
  const sessions = [session("s1", "research", [win("a", a.tabId)])];
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  assert.equal(browser.tab(a.tabId).groupId, -1);
  assert.equal(env.chrome.storage.session.snapshot().sessions.length, 1, "the popup still has the sessions");
  ok(await env.cmd("sessions", { sessions }));
  await env.settle();
  assert.equal(browser.group(browser.tab(a.tabId).groupId).title, "research", "the next publish groups");
});
