// The `act` command: one curated step on an owned tab, through chrome.debugger, with the
// bundled page.js as the only code ever evaluated, and attribution of the opener-less tabs an
// act makes appear.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, settle, until, PAGE_SOURCE, ok, refused } from "./harness.mjs";
import { ATTRIBUTION_GRACE_MS, DIALOG_TIMEOUT_MS, STEP_BOUND_MS } from "../act.js";

const PAGE_OPS = new Set(["init", "info", "observe", "locate", "focus", "scroll", "hasText"]);
const PREFIX = `(${PAGE_SOURCE})(`;

/**
 * Scripts the page behind chrome.debugger. ops(tabId, op, args) answers page.js ops;
 * onInput(tabId, method, params) sees input events. Every Runtime.evaluate must be exactly
 * `(${PAGE_SOURCE})(<JSON op>, <JSON args>)` in the tabwarden world's context.
 */
function scriptPage(browser, ops, onInput = () => {}) {
  const evals = [];
  const input = [];
  const contexts = new Map(); // tabId -> context id of its tabwarden world
  const nonces = new Map(); // tabId -> the nonce its world was initialised with (the world's state)
  const showing = new Set(); // tabs with a JavaScript dialog open
  let nextContext = 7;
  browser.setPage(async (tabId, method, params) => {
    switch (method) {
      case "Page.enable":
        return {};
      case "Page.getFrameTree":
        return { frameTree: { frame: { id: `frame-${tabId}`, url: browser.tab(tabId)?.url } } };
      case "Page.createIsolatedWorld":
        assert.equal(params.frameId, `frame-${tabId}`, "the world is made in the tab's main frame");
        assert.equal(params.worldName, "tabwarden");
        if (!contexts.has(tabId)) contexts.set(tabId, nextContext++);
        return { executionContextId: contexts.get(tabId) };
      case "Runtime.evaluate": {
        const { expression } = params;
        assert.ok(expression.startsWith(PREFIX) && expression.endsWith(")"), `not the bundled function: ${expression}`);
        const [op, args, ...rest] = JSON.parse(`[${expression.slice(PREFIX.length, -1)}]`);
        assert.equal(rest.length, 0);
        assert.equal(expression, `${PREFIX}${JSON.stringify(op)}, ${JSON.stringify(args)})`, "exactly (page)(op, args)");
        assert.ok(PAGE_OPS.has(op), `op ${op}`);
        assert.equal(params.contextId, contexts.get(tabId), "evaluated in the tabwarden world, never the page's");
        evals.push({ tabId, op, args });
        if (op === "init") {
          nonces.set(tabId, args.world);
          return { result: { type: "object", value: { document: "doc-1", epoch: 0 } } };
        }
        if (nonces.get(tabId) !== args.world) return { result: { type: "object", value: { error: { reason: "world_mismatch", message: "create it again" } } } };
        if (op === "info") return { result: { type: "object", value: { document: "doc-1", epoch: 0 } } };
        return { result: { type: "object", value: await ops(tabId, op, args) } };
      }
      case "Page.handleJavaScriptDialog":
        if (showing.delete(tabId)) return {};
        throw new Error("No dialog is showing");
      case "Input.dispatchMouseEvent":
      case "Input.insertText":
      case "Input.dispatchKeyEvent":
        input.push({ tabId, method, params });
        await onInput(tabId, method, params);
        return {};
    }
    throw new Error(`the worker sent ${method}, which act never needs`);
  });
  // A navigation: the tab's new document has a fresh world.
  const newDocument = (tabId) => nonces.delete(tabId);
  // The page opens a dialog while no step runs.
  const openDialog = (tabId) => showing.add(tabId);
  return { evals, input, newDocument, openDialog };
}

/** The worker's chrome.debugger calls, as [api, method?]. */
const debuggerCalls = (browser) =>
  browser.calls
    .filter((c) => c.api.startsWith("debugger."))
    .map((c) => (c.api === "debugger.sendCommand" ? `${c.args.target.tabId}:${c.args.method}` : `${c.args.target.tabId}:${c.api}`));

const observation = {
  document: "doc-1",
  epoch: 3,
  url: "https://a.example/",
  title: "A",
  scrollX: 0,
  scrollY: 0,
  elements: [{ id: "e1", role: "button", name: "Send", x: 10, y: 20, width: 80, height: 30 }],
  truncated: false,
  outline: [{ depth: 0, role: "button", name: "Send", text: "", id: "e1", level: 0, checked: false, disabled: false }],
  outlineOffset: 0,
  outlineMore: false,
};

test("act refuses a tab not recorded under its owner, before touching the debugger", async () => {
  const env = await setup();
  const { browser, user } = env;
  scriptPage(browser, () => observation);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  const step = { kind: "observe" };

  refused(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: user.tabId, step }), "not_owned"); // the user's tab
  refused(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: b.tabId, step }), "not_owned"); // another session's
  refused(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: 99999, step }), "not_owned"); // nobody's, gone
  refused(await env.cmd("act", { key: "k1", tabId: a.tabId, step }), "owner_required");
  assert.deepEqual(debuggerCalls(browser), [], "no attach for a refused act");

  // The owner's own tab gone: not_found.
  browser.closeTab(a.tabId);
  await env.settle();
  refused(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: a.tabId, step }), "not_found");
  assert.deepEqual(debuggerCalls(browser), []);

  // A bound tab is used: act works on it.
  ok(await env.cmd("bind", { owner: "uid-u", tabId: user.tabId }));
  assert.deepEqual(ok(await env.cmd("act", { key: "k2", owner: "uid-u", tabId: user.tabId, step })).observation, observation);
});

test("observe: attach 1.3, the tabwarden world, the bundled function with data only, detach", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { evals, newDocument } = scriptPage(browser, (tabId, op) => (op === "observe" ? observation : { x: 1, y: 1 }));
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const r = ok(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: a.tabId, step: { kind: "observe", maxElements: 50 } }));
  assert.deepEqual(r, { observation });
  assert.deepEqual(
    browser.calls.filter((c) => c.api === "debugger.attach").map((c) => c.args),
    [{ target: { tabId: a.tabId }, version: "1.3" }],
  );
  const t = a.tabId;
  assert.deepEqual(debuggerCalls(browser), [
    `${t}:debugger.attach`,
    `${t}:Page.enable`,
    `${t}:Target.setAutoAttach`, // the tab's out-of-process frames (frames.js)
    `${t}:Page.handleJavaScriptDialog`, // is a dialog showing? (no)
    `${t}:Page.getFrameTree`, // any frames? (none: the page script alone)
    `${t}:Page.getFrameTree`,
    `${t}:Page.createIsolatedWorld`,
    `${t}:Runtime.evaluate`,
    `${t}:Runtime.evaluate`,
    `${t}:debugger.detach`,
  ]);
  assert.equal(evals[0].op, "init");
  assert.match(evals[0].args.world, /^[0-9a-f]{32}$/, "a fresh world nonce");
  assert.deepEqual(evals[1], { tabId: t, op: "observe", args: { max: 50, outlineOffset: 0, outlineBytes: 32768, world: evals[0].args.world } });
  assert.deepEqual(browser.attachedTabs(), []);

  // Host fields that look like code go nowhere: the page sees only the validated step's data.
  ok(
    await env.cmd("act", {
      key: "k1",
      owner: "uid-a",
      tabId: t,
      step: { kind: "click", target: { text: "Send", expression: "alert(1)" }, method: "Runtime.evaluate", expression: "alert(2)" },
    }),
  );
  const locate = evals.find((e) => e.op === "locate");
  assert.deepEqual(locate.args, { target: { text: "Send" }, world: locate.args.world });
  // The second act found the world it initialised (same document: refs stay valid); after a
  // navigation the world is new and is initialised again.
  assert.deepEqual(evals.map((e) => e.op), ["init", "observe", "info", "locate"]);
  assert.equal(evals[2].args.world, evals[0].args.world);
  newDocument(t);
  ok(await env.cmd("act", { key: "k1", owner: "uid-a", tabId: t, step: { kind: "observe" } }));
  assert.deepEqual(evals.slice(4).map((e) => e.op), ["info", "init", "observe"]);
  assert.notEqual(evals[5].args.world, evals[0].args.world, "a fresh nonce for the new world");
  for (const c of browser.calls.filter((c) => c.api === "debugger.sendCommand")) {
    assert.doesNotMatch(JSON.stringify(c.args), /alert/, `${c.args.method} carried host text`);
  }
});

test("click, type, press and navigate produce real input and never focus anything", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { evals, input } = scriptPage(browser, (tabId, op) => {
    if (op === "locate") return { x: 50, y: 35, id: "e1" };
    if (op === "focus") return { x: 10, y: 10, id: "e2" };
    throw new Error(op);
  });
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const focused = browser.focusedWindowId();
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { ref: "e1", document: "doc-1" } } }));
  assert.deepEqual(evals.at(-1).args.target, { ref: "e1", document: "doc-1" });
  assert.deepEqual(
    input.map((i) => [i.params.type, i.params.x, i.params.y, i.params.button]),
    [
      ["mousePressed", 50, 35, "left"],
      ["mouseReleased", 50, 35, "left"],
    ],
  );
  input.length = 0;

  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "type", target: { text: "Name" }, text: "Ada" } }));
  assert.equal(evals.at(-1).op, "focus");
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "press", key: "Enter" } }));
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "press", key: "Shift+Tab" } }));
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "press", key: "Control+a" } }));
  assert.deepEqual(
    input.map((i) => [i.method, i.params.type, i.params.key, i.params.text, i.params.modifiers]),
    [
      ["Input.insertText", undefined, undefined, "Ada", undefined],
      ["Input.dispatchKeyEvent", "keyDown", "Enter", "\r", 0],
      ["Input.dispatchKeyEvent", "keyUp", "Enter", undefined, 0],
      ["Input.dispatchKeyEvent", "rawKeyDown", "Tab", undefined, 8],
      ["Input.dispatchKeyEvent", "keyUp", "Tab", undefined, 8],
      ["Input.dispatchKeyEvent", "rawKeyDown", "a", undefined, 2],
      ["Input.dispatchKeyEvent", "keyUp", "a", undefined, 2],
    ],
  );

  // navigate: tabs.update with the url only, and no debugger; it returns once loaded.
  const before = debuggerCalls(browser).length;
  ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "navigate", url: "https://a.example/next" } }));
  assert.deepEqual(
    browser.calls.filter((c) => c.api === "tabs.update").map((c) => c.args),
    [{ tabId: a.tabId, url: "https://a.example/next" }],
  );
  assert.equal(browser.tab(a.tabId).url, "https://a.example/next", "loaded before the reply");
  assert.equal(debuggerCalls(browser).length, before);

  assert.equal(browser.focusedWindowId(), focused, "focus stays with the user's window");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
  assert.deepEqual(browser.attachedTabs(), []);
});

test("a refusal of the page comes back with its reason and candidates; the debugger is detached on every error", async () => {
  const env = await setup();
  const { browser, user } = env;
  const candidates = [
    { id: "e1", role: "button", name: "Send", x: 10, y: 20, width: 80, height: 30 },
    { id: "e2", role: "button", name: "Send", x: 10, y: 60, width: 80, height: 30 },
  ];
  let failInput = false;
  scriptPage(
    browser,
    (tabId, op, args) => {
      if (args.target?.text === "Send") return { error: { reason: "ambiguous_target", message: "2 visible elements read \"Send\"", candidates, document: "doc-1", epoch: 4 } };
      if (args.target?.ref) return { error: { reason: "stale_ref", message: "ref e1 is from document doc-0" } };
      if (args.target?.selector === "[") return { error: { reason: "bad_request", message: "invalid CSS selector" } };
      return { x: 1, y: 1 };
    },
    () => {
      if (failInput) throw new Error("Cannot dispatch: target closed");
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (target) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target } });

  const amb = refused(await act({ text: "Send" }), "ambiguous_target");
  assert.deepEqual(amb.candidates, candidates);
  assert.equal(amb.document, "doc-1", "the document the candidates are refs of");
  assert.equal(amb.epoch, 4);
  refused(await act({ ref: "e1", document: "doc-0" }), "stale_ref");
  refused(await act({ selector: "[" }), "invalid_args");
  failInput = true;
  assert.match(refused(await act({ text: "Other" }), "failed").message, /target closed/);
  browser.holdDebugger(a.tabId); // DevTools is open on the tab
  assert.match(refused(await act({ text: "Other" }), "failed").message, /DevTools/);

  const attaches = browser.calls.filter((c) => c.api === "debugger.attach").length;
  const detaches = browser.calls.filter((c) => c.api === "debugger.detach").length;
  assert.equal(attaches, 5);
  assert.equal(detaches, 4, "every attach that succeeded was detached");
  assert.deepEqual(browser.attachedTabs(), []);
});

test("bad steps are refused with the corrected call, before any attach", async () => {
  const env = await setup();
  const { browser, user } = env;
  scriptPage(browser, () => observation);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  assert.match(refused(await act({ kind: "evaluate", expression: "1" }), "invalid_args").message, /observe, navigate, click/);
  assert.match(refused(await act({ kind: "navigate", url: "javascript:alert(1)" }), "invalid_args").message, /use http\(s\)/);
  refused(await act({ kind: "navigate", url: "file:///etc/passwd" }), "invalid_args");
  assert.match(refused(await act({ kind: "click" }), "invalid_args").message, /a ref .* a text, a selector, or a point/);
  assert.match(refused(await act({ kind: "click", target: { ref: "e1" } }), "invalid_args").message, /target.document/);
  refused(await act({ kind: "click", target: { ref: "e1", text: "x", document: "d" } }), "invalid_args");
  assert.match(refused(await act({ kind: "press", key: "Hyper+x" }), "invalid_args").message, /Alt, Control, Meta or Shift/);
  refused(await act({ kind: "type", text: "" }), "invalid_args");
  refused(await act({ kind: "scroll" }), "invalid_args");
  refused(await act({ kind: "wait", timeoutMs: 10_000_000 }), "invalid_args");
  refused(await act(undefined), "invalid_args");
  assert.deepEqual(debuggerCalls(browser), []);
  assert.equal(browser.calls.filter((c) => c.api === "tabs.update").length, 0);
});

test("a tab without an opener that merely appears during an act (or just after) is the user's: no announcement, no attribution", async () => {
  const env = await setup();
  const { browser, user, clock, chrome } = env;
  let appeared = null;
  let withOpener = null;
  scriptPage(
    browser,
    () => ({ x: 5, y: 5 }),
    (tabId, method, params) => {
      // On the release, a tab with no opener and no announcement appears in the acted-on
      // tab's window (the user's own, or a link another application hands to Chrome), and
      // one whose opener is the acted-on tab.
      if (params.type === "mouseReleased" && appeared === null) {
        appeared = browser.openTab(user.windowId, { url: "https://user.example/landing", active: false });
        withOpener = browser.openTab(user.windowId, { url: "https://a.example/popup", active: false, openerTabId: tabId });
      }
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  ok(await env.cmd("act", { key: "act-1", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "open" } } }));
  clock.t += ATTRIBUTION_GRACE_MS - 100;
  const late = browser.openTab(user.windowId, { url: "https://user.example/late", active: false });
  await env.settle();

  for (const id of [appeared, late]) {
    assert.equal("attributed" in env.sock.events("tabCreated").find((e) => e.tab.id === id).tab, false, "a tab that merely appears is no proof");
    assert.equal(chrome.storage.session.snapshot()[`attr:${id}`], undefined);
    refused(await env.cmd("adopt", { owner: "uid-x", tabId: id, parent: "act-1" }), "not_observed");
  }
  assert.equal(env.sock.events("tabCreated").find((e) => e.tab.id === withOpener).tab.openerTabId, a.tabId, "a tab with an opener is its opener's");
  ok(await env.cmd("bind", { owner: "uid-y", tabId: appeared }));
});

test("an announced tab's attribution survives a service-worker restart", async () => {
  const env = await setup();
  const { browser, user, host } = env;
  let spawned = null;
  scriptPage(
    browser,
    () => ({ x: 1, y: 1 }),
    (tabId, method, params) => {
      if (params.type !== "mouseReleased" || spawned !== null) return;
      // A noopener window.open: announced on the acted-on tab, created with no opener.
      browser.events.debuggerEvent.dispatch({ tabId }, "Page.windowOpen", { url: "https://a.example/landing", windowFeatures: ["noopener"], userGesture: true });
      spawned = browser.openTab(user.windowId, { url: "", active: false });
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  ok(await env.cmd("act", { key: "act-9", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "x" } } }));
  await env.settle();
  assert.equal(env.sock.events("tabCreated").find((e) => e.tab.id === spawned).tab.attributed, "act-9");

  // Chrome terminates the worker; a new one starts: the attribution is still there for adopt.
  browser.killWorker();
  env.sock.drop();
  const w2 = env.newWorker();
  await w2.start();
  const sock2 = await host.waitSocket();
  await host.handshake(sock2, 2);
  await settle(w2);
  const r = await host.command(sock2, "adopt", { owner: "uid-spawn", tabId: spawned, parent: "act-9" });
  assert.equal(r.ok, true, JSON.stringify(r.error));
});

test("the last-tab rule's blank tab, created during an act, is not attributed", async () => {
  const env = await setup();
  const { browser, chrome } = env;
  const only = browser.openWindow({ url: "https://mine.example/", focused: false });
  let release;
  const blocked = new Promise((r) => (release = r));
  scriptPage(browser, async () => {
    await blocked;
    return { x: 1, y: 1 };
  });
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: env.user.windowId }));
  // uid-b's tab becomes the last one of a user's window: closing it leaves a blank tab there.
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: only.windowId }));
  browser.closeTab(only.tabId);
  await env.settle();
  const pending = env.cmd("act", { key: "act-2", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "x" } } });
  await until(() => browser.calls.some((c) => c.api === "debugger.attach" && c.args.target.tabId === a.tabId), "the act in the page");
  ok(await env.cmd("close", { owner: "uid-b", tabId: b.tabId }));
  await env.settle();
  const blank = browser.tabsIn(only.windowId);
  assert.equal(blank.length, 1, "the window keeps a blank tab");
  assert.equal(chrome.storage.session.snapshot()[`attr:${blank[0].id}`], undefined);
  assert.equal("attributed" in env.sock.events("tabCreated").find((e) => e.tab.id === blank[0].id).tab, false);
  release();
  ok(await pending);
});

test("acts on one tab run one at a time; acts on other tabs are not held up", async () => {
  const env = await setup();
  const { browser, user } = env;
  const gates = [];
  scriptPage(browser, (tabId, op) => {
    if (op === "observe") return observation;
    return new Promise((r) => gates.push(() => r({ x: 1, y: 1 })));
  });
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const b = ok(await env.cmd("open", { owner: "uid-b", url: "https://b.example/", windowId: user.windowId }));
  const first = env.cmd("act", { key: "k1", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "x" } } });
  await until(() => gates.length === 1, "the first act in the page");
  const second = env.cmd("act", { key: "k2", owner: "uid-a", tabId: a.tabId, step: { kind: "observe" } });
  // Another tab's act runs meanwhile.
  assert.deepEqual(ok(await env.cmd("act", { key: "k3", owner: "uid-b", tabId: b.tabId, step: { kind: "observe" } })).observation, observation);
  await env.settle();
  assert.equal(
    browser.calls.filter((c) => c.api === "debugger.attach" && c.args.target.tabId === a.tabId).length,
    1,
    "the second act on the tab waits for the first",
  );
  gates[0]();
  ok(await first);
  ok(await second);
  const onA = debuggerCalls(browser).filter((c) => c.startsWith(`${a.tabId}:debugger.`));
  assert.deepEqual(onA, [`${a.tabId}:debugger.attach`, `${a.tabId}:debugger.detach`, `${a.tabId}:debugger.attach`, `${a.tabId}:debugger.detach`]);
});

test("a tab the acted-on page opens is reported with that page as its opener, or attributed when opened noopener", async () => {
  const env = await setup();
  const { browser, user } = env;
  let features = null;
  const spawned = [];
  scriptPage(
    browser,
    () => ({ x: 5, y: 5 }),
    (tabId, method, params) => {
      if (params.type !== "mouseReleased" || !features) return;
      // Chrome announces the open on the acted-on tab, then creates the tab and names the
      // window's ACTIVE tab (the user's) as its opener.
      browser.events.debuggerEvent.dispatch({ tabId }, "Page.windowOpen", { url: "https://a.example/landing", windowFeatures: features, userGesture: true });
      spawned.push(browser.openTab(user.windowId, { url: "", active: true, openerTabId: user.tabId }));
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));

  features = ["menubar", "toolbar"];
  ok(await env.cmd("act", { key: "act-1", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "Open" } } }));
  features = ["menubar", "noopener"];
  ok(await env.cmd("act", { key: "act-2", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "Open" } } }));
  await env.settle();
  const [popup, orphan] = spawned;

  const ev = (id) => env.sock.events("tabCreated").find((e) => e.tab.id === id).tab;
  assert.equal(ev(popup).openerTabId, a.tabId, "the true opener, not the user's active tab");
  assert.equal("attributed" in ev(popup), false);
  assert.equal("openerTabId" in ev(orphan), false, "noopener: no opener");
  assert.equal(ev(orphan).attributed, "act-2");
  // Later reports keep it so (Chrome's openerTabId would say the user's tab).
  browser.navigate(popup, "https://a.example/landing");
  browser.navigate(orphan, "https://a.example/landing");
  await env.settle();
  const upd = (id) => env.sock.events("tabUpdated").filter((e) => e.tab.id === id).at(-1).tab;
  assert.equal(upd(popup).openerTabId, a.tabId);
  assert.equal(upd(orphan).attributed, "act-2");
  assert.equal("openerTabId" in upd(orphan), false);
  const tabs = ok(await env.cmd("observe")).tabs;
  assert.equal(tabs.find((t) => t.id === popup).openerTabId, a.tabId);
  assert.equal(tabs.find((t) => t.id === orphan).attributed, "act-2");

  // Adoption follows what the extension saw: the popup by its opener's owner, the orphan by
  // the act's key; the user's tab's owner (nobody) and a wrong parent are refused.
  refused(await env.cmd("adopt", { owner: "uid-p", tabId: popup, parent: "act-1" }), "not_observed");
  ok(await env.cmd("adopt", { owner: "uid-p", tabId: popup, parent: "uid-a" }));
  refused(await env.cmd("adopt", { owner: "uid-o", tabId: orphan, parent: "uid-a" }), "not_observed");
  ok(await env.cmd("adopt", { owner: "uid-o", tabId: orphan, parent: "act-2" }));

  // An announcement nobody answers goes stale: a user's tab much later is the user's.
  features = null;
  browser.events.debuggerEvent.dispatch({ tabId: a.tabId }, "Page.windowOpen", { url: "x", windowFeatures: [] });
  const users = browser.openTab(user.windowId, { url: "https://user.example/", openerTabId: user.tabId });
  await env.settle();
  assert.equal(ev(users).openerTabId, user.tabId, "no act runs on the tab: its events are ignored");
});

test("attribution is narrow: no tab merely appearing attributed, in the acted-on tab's window or another, during a step or after", async () => {
  const env = await setup();
  const { browser, user, clock } = env;
  const other = browser.openWindow({ url: "https://user.example/other", focused: false });
  let during = [];
  let blocked = null;
  scriptPage(
    browser,
    (tabId, op) => (op === "observe" ? observation : { x: 1, y: 1 }),
    (tabId, method, params) => {
      if (params.type !== "mouseReleased") return;
      if (blocked) {
        // The page announces a popup the blocker stops; the user opens a tab meanwhile.
        browser.events.debuggerEvent.dispatch({ tabId }, "Page.windowOpen", { url: "https://a.example/popup", windowFeatures: [] });
        blocked.push(browser.openTab(user.windowId, { url: "https://user.example/z", openerTabId: user.tabId, active: false }));
        return;
      }
      // While the act runs: a tab in the acted-on tab's window, and one the user opens in another window.
      during = [browser.openTab(user.windowId, { url: "https://a.example/landing", active: false }), browser.openTab(other.windowId, { url: "https://user.example/x", active: false })];
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  ok(await env.cmd("act", { key: "act-1", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "go" } } }));
  await env.settle();
  const ev = (id) => env.sock.events("tabCreated").find((e) => e.tab.id === id).tab;
  assert.equal("attributed" in ev(during[0]), false, "a tab that merely appears in the acted-on tab's window is the user's");
  assert.equal("attributed" in ev(during[1]), false, "a tab in another window is the user's");

  // After an observe (it changes nothing), the window closes with the step.
  clock.t += ATTRIBUTION_GRACE_MS + 1;
  ok(await env.cmd("act", { key: "act-2", owner: "uid-a", tabId: a.tabId, step: { kind: "observe" } }));
  clock.t += 1;
  const after = browser.openTab(user.windowId, { url: "https://user.example/y", active: false });
  await env.settle();
  assert.equal("attributed" in ev(after), false);

  // An announcement whose tab never came (a blocked popup) does not claim a tab with another url.
  blocked = [];
  ok(await env.cmd("act", { key: "act-3", owner: "uid-a", tabId: a.tabId, step: { kind: "click", target: { text: "popup" } } }));
  await env.settle();
  assert.equal(ev(blocked[0]).openerTabId, user.tabId, "the user's tab keeps its own opener");
  assert.equal("attributed" in ev(blocked[0]), false);
});

test("a JavaScript dialog a step opens is left open on the session that saw it, refuses other steps, and a dialog step answers it", async () => {
  const env = await setup();
  const { browser, user, clock } = env;
  let next = null; // the dialog the next mouse release opens
  const fake = scriptPage(
    browser,
    (tabId, op) => (op === "observe" ? observation : { x: 1, y: 1 }),
    (tabId, method, params) => {
      if (params.type === "mouseReleased" && next) {
        const d = next;
        next = null;
        fake.openDialog(tabId);
        browser.events.debuggerEvent.dispatch({ tabId }, "Page.javascriptDialogOpening", { url: "https://a.example/", ...d });
      }
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const answers = () =>
    browser.calls.filter((c) => c.api === "debugger.sendCommand" && c.args.method === "Page.handleJavaScriptDialog").map((c) => c.args.params);

  assert.equal(refused(await act({ kind: "dialog", accept: true }), "no_dialog").message.includes("no JavaScript dialog"), true);
  next = { type: "confirm", message: "Delete everything?" };
  const beforeClick = answers().length;
  const r = ok(await act({ kind: "click", target: { text: "Delete" } }));
  const probes = answers().length;
  assert.deepEqual(r.dialog, { type: "confirm", message: "Delete everything?" });
  // Only the fresh session's question whether a dialog shows, before the click; the dialog
  // step below answers the confirm, so it was still showing.
  assert.equal(probes, beforeClick + 1, "nothing answered the confirm on anyone's behalf");
  assert.deepEqual(browser.attachedTabs(), [a.tabId], "the session that saw the dialog is kept");
  const open = refused(await act({ kind: "observe" }), "dialog_open");
  assert.match(open.message, /confirm "Delete everything\?".*Dialog step/);
  assert.deepEqual(ok(await act({ kind: "dialog", accept: false })), { spawns: 0 });
  assert.deepEqual(answers().slice(probes), [{ accept: false }]);
  assert.deepEqual(browser.attachedTabs(), [], "detached once answered");
  refused(await act({ kind: "dialog", accept: false }), "no_dialog");

  // A prompt: the step's text, else its default.
  for (const [text, want] of [["Ada", "Ada"], ["", "draft"]]) {
    next = { type: "prompt", message: "New name?", defaultPrompt: "draft" };
    assert.deepEqual(ok(await act({ kind: "click", target: { text: "Rename" } })).dialog, { type: "prompt", message: "New name?", defaultPrompt: "draft" });
    ok(await act({ kind: "dialog", accept: true, text }));
    assert.deepEqual(answers().at(-1), { accept: true, promptText: want });
  }
  assert.equal(refused(await act({ kind: "dialog", accept: false, text: "Ada" }), "invalid_args").message.includes("accept: true only"), true);

  // Nobody answers: dismissed after the dialog timeout, detached, and the tab goes on.
  next = { type: "alert", message: "Saved" };
  assert.deepEqual(ok(await act({ kind: "click", target: { text: "Notify" } })).dialog, { type: "alert", message: "Saved" });
  await clock.advance(DIALOG_TIMEOUT_MS - 1, env.worker);
  assert.deepEqual(browser.attachedTabs(), [a.tabId], "still waiting before the timeout");
  await clock.advance(2, env.worker);
  await until(() => browser.attachedTabs().length === 0, "detached after the timeout");
  assert.deepEqual(answers().at(-1), { accept: false });
  assert.deepEqual(ok(await act({ kind: "observe" })), { observation });

  // A close of a tab whose dialog waits: dismissed, the kept session ended, the tab closed.
  next = { type: "confirm", message: "Delete everything?" };
  ok(await act({ kind: "click", target: { text: "Delete" } }));
  const before = answers().length;
  ok(await env.cmd("close", { owner: "uid-a", tabId: a.tabId }));
  assert.deepEqual(answers()[before], { accept: false });
  assert.deepEqual(browser.attachedTabs(), []);
  assert.equal(browser.tab(a.tabId), undefined);
});

test("a step whose page stops answering is abandoned after the bound: detached, the tab's next act runs", async () => {
  const env = await setup();
  const { browser, user, clock } = env;
  let hang = true;
  scriptPage(browser, (tabId, op) => {
    if (op === "observe" && hang) return new Promise(() => {}); // a dialog or a busy script: never answers
    return observation;
  });
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const stuck = env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "observe" } });
  await until(() => browser.attachedTabs().length === 1, "the act attached");
  await env.settle();
  const next = env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "observe" } });
  await clock.advance(STEP_BOUND_MS - 1, env.worker);
  assert.deepEqual(browser.attachedTabs(), [a.tabId], "still waiting before the bound");
  hang = false;
  await clock.advance(2, env.worker);
  assert.match(refused(await stuck, "timeout").message, /did not answer within 25 s/);
  assert.deepEqual(ok(await next), { observation }, "the tab's queue moved on");
  assert.deepEqual(browser.attachedTabs(), []);
});

test("the manifest asks for debugger (actions) and tabGroups (the Session Monitor's groups) and nothing more: no site host permissions, no scripting", async () => {
  const { readFile } = await import("node:fs/promises");
  const m = JSON.parse(await readFile(new URL("../manifest.json", import.meta.url), "utf8"));
  assert.deepEqual([...m.permissions].sort(), ["alarms", "debugger", "storage", "tabGroups", "tabs"]);
  assert.deepEqual(m.host_permissions, ["http://127.0.0.1/*"], "the agent's loopback host only");
  assert.equal(m.optional_permissions, undefined);
  assert.equal(m.content_scripts, undefined);
});

test("a mutating step's result counts the new pages its tab announced (spawns); navigate's has none", async () => {
  const env = await setup();
  const { browser, user } = env;
  let opens = 0;
  scriptPage(
    browser,
    () => ({ x: 5, y: 5 }),
    (tabId, method, params) => {
      if (params.type !== "mouseReleased") return;
      for (let i = 0; i < opens; i++) browser.events.debuggerEvent.dispatch({ tabId }, "Page.windowOpen", { url: "https://a.example/landing", windowFeatures: [], userGesture: true });
    },
  );
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const click = { kind: "click", target: { text: "Open" } };
  assert.deepEqual(ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: click })), { spawns: 0 }, "a click that opens nothing");
  opens = 2;
  assert.deepEqual(ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: click })), { spawns: 2 });
  opens = 0;
  assert.deepEqual(ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "press", key: "Enter" } })), { spawns: 0 }, "counted per act");
  assert.deepEqual(ok(await env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step: { kind: "navigate", url: "https://a.example/next" } })), {}, "navigate runs without a debugger session: unknown");
  await env.settle();
});
