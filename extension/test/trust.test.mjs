// The extension and its host prove themselves to each other (docs/extension-protocol.md
// "Handshake"). Each test is an attack that worked on the token-in-hello protocol: a peer that
// merely listens on the port (another local user, while the agent is down) must get no secret
// and no obedience, and a reply must never reach a peer other than the one that asked.

import test from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setup, settle, KEY, TOKEN, deriveKeyNode, hostProof, secretForms } from "./harness.mjs";
import { ALARM_NAME, HANDSHAKE_TIMEOUT_MS } from "../background.js";

/** What a squatter learns: every frame the worker sent it. Checks no form of the secret is there. */
function assertNoSecret(sock) {
  const wire = JSON.stringify(sock.sent);
  for (const secret of secretForms()) assert.ok(!wire.includes(secret), "a form of the pairing secret reached the peer");
}

/** A squatter's command: would open a tab and close the user's tab if obeyed. */
function tryToCommand(env, sock) {
  sock.deliver({ type: "command", id: "sq-1", op: "open", args: { owner: "evil", url: "https://evil.example/", windowId: env.user.windowId } });
  sock.deliver({ type: "command", id: "sq-2", op: "observe", args: {} });
  sock.deliver({ type: "command", id: "sq-3", op: "records", args: {} });
}

async function assertNotObeyed(env, sock, tabsBefore) {
  await settle(env.worker);
  assert.deepEqual(env.browser.tabIds(), tabsBefore, "nothing opened or closed");
  assert.equal(sock.frames("result").length, 0, "no result frame: nothing answered");
  assert.equal(sock.frames("event").length, 0, "no events reported");
  assert.ok(!Object.keys(env.chrome.storage.session.snapshot()).some((k) => k === "pending:evil"), "no open started");
}

test("a squatter that answers welcome without a challenge gets no secret and no obedience", async () => {
  const env = await setup({ connect: false });
  const before = env.browser.tabIds();
  await env.worker.start();
  const sock = await env.host.waitSocket();
  sock.accept();
  await sock.waitFrame((f) => f.type === "hello", "hello");
  // The old protocol's host: welcome, then commands.
  sock.deliver({ type: "welcome", epoch: 1 });
  tryToCommand(env, sock);
  env.browser.openTab(env.user.windowId, { url: "https://user-private.example/" });
  await assertNotObeyed(env, sock, [...before, env.browser.tabIds().at(-1)]);
  assertNoSecret(sock);
  assert.deepEqual(sock.sent.map((f) => f.type), ["hello"], "the worker sent nothing after hello");
  assert.equal(sock.readyState, 3, "the worker closed the socket");
  const conn = env.chrome.storage.session.snapshot().conn;
  assert.equal(conn.state, "host_unverified");
  assert.match(conn.lastError, /host failed to prove itself/);
  assert.notEqual(conn.state, "connected");
});

test("a squatter with a wrong proof gets no auth, no secret, no obedience; the worker does not retry by itself", async () => {
  const env = await setup({ connect: false });
  const { host, worker, clock, browser, chrome } = env;
  const before = browser.tabIds();
  await worker.start();
  const sock = await host.waitSocket();
  sock.accept();
  const hello = await sock.waitFrame((f) => f.type === "hello", "hello");
  // It does not know the key: a proof made with another key (e.g. guessed, or an old pairing's).
  const nonceH = randomBytes(32).toString("base64url");
  const wrongKey = deriveKeyNode("not-the-token");
  sock.deliver({ type: "challenge", nonce: nonceH, epoch: 9, proof: hostProof(wrongKey, hello.nonce, nonceH, 9) });
  await settle(worker);
  assert.equal(sock.frames("auth").length, 0, "no proof of ours for an impostor");
  sock.deliver({ type: "welcome", epoch: 9 });
  tryToCommand(env, sock);
  await assertNotObeyed(env, sock, before);
  assertNoSecret(sock);
  assert.equal(sock.readyState, 3);
  const conn = chrome.storage.session.snapshot().conn;
  assert.equal(conn.state, "host_unverified");
  assert.match(conn.lastError, /host failed to prove itself/);

  // No retry spam: no timer, and neither the alarm nor a worker restart redials.
  assert.deepEqual(clock.pending(), []);
  browser.fireAlarm(ALARM_NAME);
  await worker.start();
  await settle(worker);
  assert.equal(host.sockets.length, 1, "no reconnect after a failed host proof");

  // The user presses Reconnect once the real agent runs again: the real host proves itself.
  await chrome.runtime.sendMessage({ type: "reconnect" });
  const real = await host.waitSocket();
  await host.handshake(real, 10);
  await settle(worker);
  assert.equal(chrome.storage.session.snapshot().conn.state, "connected");
});

test("malformed challenges and frames out of order are refused like a wrong proof", async () => {
  const cases = {
    "no proof": (h, n) => ({ type: "challenge", nonce: n, epoch: 1 }),
    "short nonce": (h, n) => ({ type: "challenge", nonce: "abc", epoch: 1, proof: hostProof(KEY, h.nonce, "abc", 1) }),
    "epoch not a number": (h, n) => ({ type: "challenge", nonce: n, epoch: "1", proof: hostProof(KEY, h.nonce, n, 1) }),
    "proof for another epoch": (h, n) => ({ type: "challenge", nonce: n, epoch: 2, proof: hostProof(KEY, h.nonce, n, 1) }),
    "the extension's own nonce echoed": (h) => ({ type: "challenge", nonce: h.nonce, epoch: 1, proof: "x".repeat(43) }),
    "a command first": () => ({ type: "command", id: "c1", op: "observe", args: {} }),
    "not JSON": () => "{nope",
  };
  for (const [name, make] of Object.entries(cases)) {
    const env = await setup({ connect: false });
    await env.worker.start();
    const sock = await env.host.waitSocket();
    sock.accept();
    const hello = await sock.waitFrame((f) => f.type === "hello", "hello");
    sock.deliver(make(hello, randomBytes(32).toString("base64url")));
    await settle(env.worker);
    assert.equal(sock.frames("auth").length, 0, name);
    assert.equal(sock.frames("result").length, 0, name);
    assert.equal(env.chrome.storage.session.snapshot().conn.state, "host_unverified", name);
  }
});

test("a welcome for another epoch than the proven challenge is refused", async () => {
  const env = await setup({ connect: false });
  await env.worker.start();
  const sock = await env.host.waitSocket();
  sock.accept();
  const hello = await sock.waitFrame((f) => f.type === "hello", "hello");
  const nonceH = randomBytes(32).toString("base64url");
  sock.deliver({ type: "challenge", nonce: nonceH, epoch: 5, proof: hostProof(KEY, hello.nonce, nonceH, 5) });
  await sock.waitFrame((f) => f.type === "auth", "auth");
  sock.deliver({ type: "welcome", epoch: 6 });
  tryToCommand(env, sock);
  await settle(env.worker);
  assert.equal(sock.frames("result").length, 0);
  assert.equal(env.chrome.storage.session.snapshot().conn.state, "host_unverified");
});

test("a host that never completes the handshake is dropped after a timeout and retried with backoff", async () => {
  const env = await setup({ connect: false });
  const { host, worker, clock } = env;
  await worker.start();
  const sock = await host.waitSocket();
  sock.accept();
  await sock.waitFrame((f) => f.type === "hello", "hello");
  await clock.advance(HANDSHAKE_TIMEOUT_MS, worker);
  assert.equal(sock.readyState, 3, "dropped");
  const conn = env.chrome.storage.session.snapshot().conn;
  assert.equal(conn.state, "disconnected");
  assert.match(conn.lastError, /handshake/);
  assert.equal(clock.pending()[0], 1000, "ordinary backoff: a slow host may be the real one");
});

test("a reply never goes out on a newer socket: a command's socket closed, the reply is dropped", async () => {
  const env = await setup();
  const { host, worker, clock, chrome, user } = env;
  // Hold tabs.create until the first socket is gone and a second one is welcomed.
  let release;
  const gate = new Promise((r) => (release = r));
  const create = chrome.tabs.create;
  chrome.tabs.create = async (p) => {
    await gate;
    return create(p);
  };
  const a = env.sock;
  a.deliver({ type: "command", id: "old-7", op: "open", args: { owner: "uid-a", url: "https://a.example/", windowId: user.windowId } });
  // (No worker.idle() while the gate holds the ownership queue: plain ticks only.)
  await settle();
  a.serverClose(1006); // the agent restarts
  await settle();
  await clock.advance(clock.pending()[0]);
  const b = await host.waitSocket();
  await host.handshake(b, 2);
  await settle();
  release();
  await settle(worker);
  await settle(worker);
  assert.ok(chrome.storage.session.snapshot()["conn"].state === "connected");
  assert.equal(b.frames("result").length, 0, "the old command's reply did not reach the new peer");
  assert.equal(a.frames("result").length, 0, "nor the closed socket");
  // The tab was opened and recorded all the same: the new host's idempotent retry finds it.
  const again = await host.command(b, "open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId });
  assert.equal(again.ok, true);
  assert.equal(env.browser.tabsIn(user.windowId).length, 2, "no second tab");
});

test("an older build's stored token becomes the key on the next connect and is dropped", async () => {
  const env = await setup({ paired: false });
  await env.chrome.storage.local.set({ token: TOKEN, port: 47321, pairedAt: 1 });
  await env.worker.start();
  const sock = await env.host.waitSocket();
  await env.host.handshake(sock, 3); // the fake host knows KEY = derive(TOKEN)
  await settle(env.worker);
  const local = env.chrome.storage.local.snapshot();
  assert.equal(local.token, undefined);
  assert.equal(local.key, KEY.toString("base64url"));
  assertNoSecret(sock);
});

test("Forget tells the connected host, closes the socket and drops the key", async () => {
  const env = await setup();
  const { chrome, sock, worker, host, browser } = env;
  const reply = await chrome.runtime.sendMessage({ type: "forget" });
  assert.deepEqual(reply, { ok: true, hostTold: true });
  assert.deepEqual(sock.frames("forget"), [{ type: "forget" }], "the host is told on the authenticated socket");
  assert.equal(sock.readyState, 3, "socket closed");
  const local = chrome.storage.local.snapshot();
  assert.equal(local.key, undefined);
  assert.equal(local.token, undefined);
  assert.equal(local.pairedAt, undefined);
  await settle(worker);
  assert.equal(chrome.storage.session.snapshot().conn.state, "unpaired");
  // Nothing redials: not the alarm, not a worker start.
  browser.fireAlarm(ALARM_NAME);
  await worker.start();
  await settle(worker);
  assert.equal(host.sockets.length, 1);
});

test("Forget while disconnected drops the key without telling anyone", async () => {
  const env = await setup();
  env.sock.serverClose(1006);
  await settle(env.worker);
  const reply = await env.chrome.runtime.sendMessage({ type: "forget" });
  assert.deepEqual(reply, { ok: true, hostTold: false });
  assert.equal(env.chrome.storage.local.snapshot().key, undefined);
  assert.deepEqual(env.clock.pending(), [], "the pending retry is cancelled");
  await env.clock.advance(60_000, env.worker);
  assert.equal(env.host.sockets.length, 1);
});
