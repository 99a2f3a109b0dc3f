// The ownership ledger: the seam's rules (internal/browser/ledger) in the extension.
// Authority over a tab comes from what this extension observed (it opened the tab, or saw it
// spawned from a recorded tab), never from what the host claims.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok } from "./harness.mjs";

const refused = (frame, reason) => {
  assert.equal(frame.ok, false, `expected refusal ${reason}, got ${JSON.stringify(frame.result)}`);
  assert.equal(frame.error.reason, reason, frame.error.message);
  assert.equal(typeof frame.error.message, "string");
};
const records = async (env) => ok(await env.cmd("records")).records;

test("the attack: a forged Spawned window cannot adopt the user's tab, so it can never close it", async () => {
  const env = await setup();
  const { browser, user } = env;
  ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  // The user's own tab has no opener: nobody saw it spawned by anything.
  refused(await env.cmd("adopt", { owner: "uid-forged", tabId: user.tabId, parent: "uid-a" }), "not_observed");
  refused(await env.cmd("close", { owner: "uid-forged", tabId: user.tabId }), "not_owned");
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-forged" })), { closed: [] });
  assert.ok(browser.tab(user.tabId), "the user's tab is open");
  assert.equal((await records(env)).filter((r) => r.tabId === user.tabId).length, 0);
});

test("adopt needs an opener recorded under the claimed parent", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  // Spawned by uid-a's page.
  const child = browser.openTab(user.windowId, { url: "https://a.example/child", openerTabId: a.tabId, active: false });
  // Spawned by the user's tab (not recorded): nobody's spawn.
  const userChild = browser.openTab(user.windowId, { url: "https://user.example/child", openerTabId: user.tabId, active: false });
  // No opener at all (typed by the user).
  const typed = browser.openTab(user.windowId, { url: "https://typed.example/", active: false });
  await env.settle();

  refused(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-b" }), "not_observed"); // wrong parent
  refused(await env.cmd("adopt", { owner: "uid-c", tabId: userChild, parent: "uid-a" }), "not_observed");
  refused(await env.cmd("adopt", { owner: "uid-c", tabId: typed, parent: "uid-a" }), "not_observed");
  refused(await env.cmd("adopt", { owner: "uid-c", tabId: child }), "invalid_args"); // no parent
  refused(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "" }), "invalid_args");
  assert.deepEqual(
    ok(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-a" })),
    { tabId: child, windowId: user.windowId, createdWindow: false },
  );
  // Idempotent for the same owner.
  ok(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-a" }));
  // Transitive: a spawn of the adopted spawn.
  const grandchild = browser.openTab(user.windowId, { url: "https://a.example/gc", openerTabId: child, active: false });
  await env.settle();
  ok(await env.cmd("adopt", { owner: "uid-d", tabId: grandchild, parent: "uid-c" }));
  assert.deepEqual(
    (await records(env)).map((r) => [r.owner, r.tabId, r.kind, r.parent]),
    [
      ["uid-a", a.tabId, "opened", undefined],
      ["uid-b", b.tabId, "opened", undefined],
      ["uid-c", child, "spawned", "uid-a"],
      ["uid-d", grandchild, "spawned", "uid-c"],
    ],
  );
  assert.ok(browser.tab(userChild) && browser.tab(typed));
});

test("the opener seen at tabs.onCreated counts even after Chrome stops reporting it", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const child = browser.openTab(user.windowId, { url: "https://a.example/child", openerTabId: a.tabId, active: false });
  await env.settle();
  browser.dropOpener(child);
  assert.equal(browser.tab(child).openerTabId, undefined);
  ok(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-a" }));
  // Removing the tab forgets what was remembered of it.
  browser.closeTab(child);
  await env.settle();
  assert.equal(chrome.storage.session.snapshot()[`opener:${child}`], undefined);
});

test("adopt and bind of a tab recorded under another owner: in_use; an owner holds one tab", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const child = browser.openTab(user.windowId, { url: "https://a.example/child", openerTabId: a.tabId, active: false });
  const child2 = browser.openTab(user.windowId, { url: "https://a.example/child2", openerTabId: a.tabId, active: false });
  await env.settle();
  ok(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-a" }));
  ok(await env.cmd("bind", { owner: "uid-bound", tabId: user.tabId }));

  refused(await env.cmd("adopt", { owner: "uid-x", tabId: a.tabId, parent: "uid-a" }), "in_use"); // opened by another
  refused(await env.cmd("adopt", { owner: "uid-x", tabId: child, parent: "uid-a" }), "in_use"); // spawned, another
  refused(await env.cmd("adopt", { owner: "uid-x", tabId: user.tabId, parent: "uid-a" }), "in_use"); // bound
  refused(await env.cmd("adopt", { owner: "uid-a", tabId: a.tabId, parent: "uid-a" }), "in_use"); // opened ≠ spawned
  refused(await env.cmd("bind", { owner: "uid-x", tabId: a.tabId }), "in_use");
  refused(await env.cmd("bind", { owner: "uid-x", tabId: child }), "in_use");
  refused(await env.cmd("bind", { owner: "uid-x", tabId: user.tabId }), "in_use");
  refused(await env.cmd("bind", { owner: "uid-a", tabId: a.tabId }), "in_use"); // its own opened tab
  // One live tab per owner.
  refused(await env.cmd("adopt", { owner: "uid-c", tabId: child2, parent: "uid-a" }), "in_use");
  refused(await env.cmd("bind", { owner: "uid-c", tabId: child2 }), "in_use");
  refused(await env.cmd("open", { owner: "uid-bound", url: "https://x.example/", windowId: user.windowId }), "in_use");
  refused(await env.cmd("bind", { owner: "uid-y", tabId: 999999 }), "not_found");

  assert.deepEqual(
    (await records(env)).map((r) => [r.owner, r.tabId, r.kind]),
    [
      ["uid-bound", user.tabId, "bound"], // the user's tab is the browser's first
      ["uid-a", a.tabId, "opened"],
      ["uid-c", child, "spawned"],
    ],
  );
});

test("a bound tab is used, never closed: close is not_owned, cleanup skips it, release detaches it", async () => {
  const env = await setup();
  const { browser, user } = env;
  assert.deepEqual(ok(await env.cmd("bind", { owner: "uid-b", tabId: user.tabId })), { tabId: user.tabId, windowId: user.windowId });
  ok(await env.cmd("bind", { owner: "uid-b", tabId: user.tabId })); // idempotent
  assert.deepEqual(await records(env), [{ owner: "uid-b", tabId: user.tabId, windowId: user.windowId, createdWindow: false, kind: "bound" }]);

  refused(await env.cmd("close", { owner: "uid-b", tabId: user.tabId }), "not_owned");
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-b" })), { closed: [] });
  assert.ok(browser.tab(user.tabId), "the bound tab is open");
  assert.equal(browser.calls.filter((c) => c.api === "tabs.remove").length, 0);
  assert.equal((await records(env)).length, 1, "cleanup leaves the binding to release");

  // Release by another owner leaves the record alone; by its owner, drops it; twice is fine.
  assert.deepEqual(ok(await env.cmd("release", { owner: "uid-x", tabId: user.tabId })), { released: false });
  assert.equal((await records(env)).length, 1);
  assert.deepEqual(ok(await env.cmd("release", { owner: "uid-b", tabId: user.tabId })), { released: true });
  assert.deepEqual(ok(await env.cmd("release", { owner: "uid-b", tabId: user.tabId })), { released: false });
  assert.deepEqual(await records(env), []);
  assert.ok(browser.tab(user.tabId));
  refused(await env.cmd("release", { tabId: user.tabId }), "owner_required");
});

test("release of an owned tab (a Keep deliverable) leaves it open and no longer closeable", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  assert.deepEqual(ok(await env.cmd("release", { owner: "uid-a", tabId: a.tabId })), { released: true });
  refused(await env.cmd("close", { owner: "uid-a", tabId: a.tabId }), "not_owned");
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-a" })), { closed: [] });
  assert.ok(browser.tab(a.tabId));
});

test("records of an older build (via open/adopt) keep their meaning", async () => {
  const env = await setup();
  const { browser, user, chrome } = env;
  const t = browser.openTab(user.windowId, { url: "https://old.example/", active: false });
  const s = browser.openTab(user.windowId, { url: "https://old.example/s", active: false });
  await chrome.storage.session.set({
    [`rec:${t}`]: { owner: "uid-old", tabId: t, windowId: user.windowId, createdWindow: false, via: "open" },
    [`rec:${s}`]: { owner: "uid-olds", tabId: s, windowId: user.windowId, createdWindow: false, via: "adopt" },
  });
  assert.deepEqual((await records(env)).map((r) => r.kind), ["opened", "spawned"]);
  assert.deepEqual(ok(await env.cmd("cleanup", { owner: "uid-old" })), { closed: [t] });
});

test("bind of a recorded page's spawn is in_use: it belongs to that session's adoption", async () => {
  const env = await setup();
  const { browser, user } = env;
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  ok(await env.cmd("bind", { owner: "uid-b", tabId: user.tabId }));
  // uid-a's page spawns a tab; before uid-a's session adopts it, another namespace tries to bind it.
  const child = browser.openTab(user.windowId, { url: "https://a.example/child", openerTabId: a.tabId, active: false });
  // Chrome may stop reporting the opener; the one seen at onCreated still counts.
  const child2 = browser.openTab(user.windowId, { url: "https://a.example/child2", openerTabId: a.tabId, active: false });
  // A spawn of a bound page that no act of its session caused is the user's (their own click).
  const boundChild = browser.openTab(user.windowId, { url: "https://mail.example.com/x", openerTabId: user.tabId, active: false });
  // Not a session's spawn: a typed tab, and a spawn of an unrecorded tab.
  const typed = browser.openTab(user.windowId, { url: "https://typed.example/", active: false });
  const typedChild = browser.openTab(user.windowId, { url: "https://typed.example/c", openerTabId: typed, active: false });
  await env.settle();
  browser.dropOpener(child2);

  const r = await env.cmd("bind", { owner: "uid-x", tabId: child });
  refused(r, "in_use");
  assert.match(r.error.message, /spawned by tab .* uid-a/);
  refused(await env.cmd("bind", { owner: "uid-y", tabId: child2 }), "in_use");
  assert.deepEqual((await records(env)).map((r) => r.owner).sort(), ["uid-a", "uid-b"], "nothing was bound");
  refused(await env.cmd("adopt", { owner: "uid-z", tabId: boundChild, parent: "uid-b" }), "not_observed");
  ok(await env.cmd("bind", { owner: "uid-z", tabId: boundChild }));

  // The spawn stays adoptable by its session.
  ok(await env.cmd("adopt", { owner: "uid-c", tabId: child, parent: "uid-a" }));
  // Unrelated tabs bind as before (the child first: once its opener is bound, it is that session's).
  ok(await env.cmd("bind", { owner: "uid-y", tabId: typedChild }));
  ok(await env.cmd("bind", { owner: "uid-x", tabId: typed }));
});
