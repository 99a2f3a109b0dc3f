// Connection lifecycle: hello/welcome, keepalive pings, reconnect backoff, the alarm safety net,
// and pairing from the popup.

import test from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setup, settle, TOKEN, KEY, KEY_B64, deriveKeyNode, keyIdNode, hostProof, extProof, secretForms, patchGlobalConsole } from "./harness.mjs";
import { ALARM_NAME } from "../background.js";

// The protocol's number, not the implementation's constant: the test must notice a change.
const PING_INTERVAL_MS = 20_000;

test("hello carries a fresh nonce, the key id and the manifest version, never the secret; nothing else before welcome", async () => {
  const env = await setup({ connect: false });
  await env.worker.start();
  const sock = await env.host.waitSocket();
  assert.equal(sock.url, "ws://127.0.0.1:47321/v1/connect");
  sock.accept();
  await settle(env.worker);
  env.browser.openTab(env.user.windowId, { url: "https://early.example/" }); // before welcome
  await settle(env.worker);
  assert.equal(sock.sent.length, 1);
  const hello = sock.sent[0];
  assert.deepEqual(Object.keys(hello).sort(), ["kid", "nonce", "type", "version"]);
  assert.equal(hello.type, "hello");
  assert.equal(hello.version, "0.1.0");
  assert.match(hello.nonce, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(hello.kid, keyIdNode(KEY));
  // The host proves itself; the extension answers with its own proof; then welcome.
  const nonceH = randomBytes(32).toString("base64url");
  sock.deliver({ type: "challenge", nonce: nonceH, epoch: 7, proof: hostProof(KEY, hello.nonce, nonceH, 7) });
  const auth = await sock.waitFrame((f) => f.type === "auth", "auth");
  assert.deepEqual(Object.keys(auth).sort(), ["proof", "type"]);
  assert.equal(auth.proof, extProof(KEY, nonceH, hello.nonce));
  sock.deliver({ type: "welcome", epoch: 7 });
  await settle(env.worker);
  assert.deepEqual(sock.sent.map((f) => f.type), ["hello", "auth"], "nothing but the handshake before welcome");
  const conn = env.chrome.storage.session.snapshot().conn;
  assert.equal(conn.state, "connected");
  assert.equal(conn.epoch, 7);
  const everything = JSON.stringify(sock.sent) + JSON.stringify(env.chrome.storage.session.snapshot());
  for (const secret of secretForms()) assert.ok(!everything.includes(secret), "no form of the secret on the socket or in session storage");
  env.browser.openTab(env.user.windowId, { url: "https://late.example/" });
  await settle(env.worker);
  assert.ok(sock.events("tabCreated").some((e) => e.tab.url === "https://late.example/"), "events flow after welcome");
  assert.ok(!sock.events("tabCreated").some((e) => e.tab.url === "https://early.example/"), "no event before welcome");
});

test("each hello has a new nonce; a challenge replayed from an earlier handshake is refused", async () => {
  const env = await setup();
  const { host, worker, clock } = env;
  // Record the first handshake's challenge, as a squatter listening in on a previous run could.
  const first = env.sock.sent.find((f) => f.type === "hello");
  env.sock.serverClose(1006);
  await settle(worker);
  await clock.advance(clock.pending()[0], worker);
  const s2 = await host.waitSocket();
  s2.accept();
  const hello2 = await s2.waitFrame((f) => f.type === "hello", "hello");
  assert.notEqual(hello2.nonce, first.nonce, "a fresh nonce per connection");
  // A proof that was valid for the first nonce:
  const nonceH = "A".repeat(43);
  s2.deliver({ type: "challenge", nonce: nonceH, epoch: 1, proof: hostProof(KEY, first.nonce, nonceH, 1) });
  await settle(worker);
  assert.equal(s2.frames("auth").length, 0, "no auth for a replayed challenge");
  assert.equal(s2.readyState, 3, "closed");
  assert.equal(env.chrome.storage.session.snapshot().conn.state, "host_unverified");
});

test("a ping goes out every 20 s while connected, and stops when disconnected", async () => {
  const env = await setup();
  const { clock, sock, worker } = env;
  assert.equal(sock.frames("ping").length, 0);
  await clock.advance(PING_INTERVAL_MS - 1, worker);
  assert.equal(sock.frames("ping").length, 0);
  await clock.advance(1, worker);
  assert.equal(sock.frames("ping").length, 1);
  await clock.advance(PING_INTERVAL_MS * 3, worker);
  assert.equal(sock.frames("ping").length, 4);
  // No gap between consecutive frames exceeds 20 s: the pending ping timer is never further out.
  assert.ok(clock.pending().every((d) => d <= PING_INTERVAL_MS));

  sock.serverClose(1001, "going away");
  await settle(worker);
  await clock.advance(PING_INTERVAL_MS * 2, worker); // the reconnect dials a new socket, not yet accepted
  assert.equal(sock.frames("ping").length, 4, "no pings on a closed socket");
});

test("reconnect backs off 1s, 2s, 4s … capped at 30s, and resets after a welcome", async () => {
  const env = await setup();
  const { clock, worker, host } = env;
  env.sock.serverClose(1006);
  await settle(worker);
  const delays = [];
  for (let i = 0; i < 7; i++) {
    const d = clock.pending()[0];
    delays.push(d);
    await clock.advance(d, worker);
    const s = await host.waitSocket();
    s.serverClose(1006); // host still down
    await settle(worker);
  }
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  assert.match(env.chrome.storage.session.snapshot().conn.lastError, /closed \(1006\)/);

  // The host comes back: welcome resets the backoff.
  await clock.advance(clock.pending()[0], worker);
  const good = await host.waitSocket();
  await host.handshake(good, 2);
  await settle(worker);
  good.serverClose(1001);
  await settle(worker);
  assert.equal(clock.pending()[0], 1000);
});

test("the alarm safety net reconnects a worker whose timers died; 4401 stops retrying", async () => {
  const env = await setup();
  const { browser, clock, worker, host, chrome } = env;
  assert.equal((await chrome.alarms.get(ALARM_NAME))?.periodInMinutes, 0.5);
  env.sock.serverClose(1006);
  await settle(worker);
  clock.clearAll(); // the retry setTimeout is lost (e.g. the worker was suspended)
  browser.fireAlarm(ALARM_NAME);
  const s2 = await host.waitSocket();
  await host.handshake(s2, 2);
  await settle(worker);
  assert.equal(chrome.storage.session.snapshot().conn.epoch, 2);

  // Connected: another alarm does not open a second connection.
  browser.fireAlarm(ALARM_NAME);
  await settle(worker);
  assert.equal(host.sockets.length, 2);

  // The token was revoked by a newer pairing: stop, and tell the user.
  s2.serverClose(4401, "unauthorized");
  await settle(worker);
  assert.deepEqual(clock.pending(), [], "no ping, no retry timer");
  browser.fireAlarm(ALARM_NAME);
  await settle(worker);
  assert.equal(host.sockets.length, 2, "no reconnect after 4401");
  const conn = chrome.storage.session.snapshot().conn;
  assert.equal(conn.state, "unauthorized");
  assert.match(conn.lastError, /pair again/);
});

test("4409 (already connected) is retried with backoff", async () => {
  const env = await setup();
  env.sock.serverClose(4409, "already_connected");
  await settle(env.worker);
  assert.equal(env.clock.pending()[0], 1000);
  assert.match(env.chrome.storage.session.snapshot().conn.lastError, /4409/);
});

test("an unpaired worker does not dial; its state says so", async () => {
  const env = await setup({ paired: false });
  await env.worker.start();
  await settle(env.worker);
  assert.equal(env.host.sockets.length, 0);
  assert.equal(env.chrome.storage.session.snapshot().conn.state, "unpaired");
});

test("pairing from the popup stores only the derived key, connects with it, and never logs or sends the secret", async () => {
  const fetchCalls = [];
  const PAIRED = "tok_fresh-from-pairing_SECRET_9d1e";
  const env = await setup({
    paired: false,
    fetch: async (url, init) => {
      fetchCalls.push({ url, init });
      return { ok: true, status: 200, headers: { get: () => null }, json: async () => ({ token: PAIRED }) };
    },
  });
  const restore = patchGlobalConsole(env.out);
  try {
    await env.worker.start();
    const reply = await env.chrome.runtime.sendMessage({ type: "pair", code: "123-456", port: 5555 });
    assert.deepEqual(reply, { ok: true });
    assert.equal(fetchCalls.length, 1);
    assert.equal(fetchCalls[0].url, "http://127.0.0.1:5555/v1/pair");
    assert.equal(fetchCalls[0].init.method, "POST");
    assert.deepEqual(JSON.parse(fetchCalls[0].init.body), { code: "123-456" });
    const local = env.chrome.storage.local.snapshot();
    assert.equal(local.key, deriveKeyNode(PAIRED).toString("base64url"));
    assert.equal(local.token, undefined, "the token itself is not kept");
    assert.equal(local.port, 5555);

    const sock = await env.host.waitSocket();
    assert.equal(sock.url, "ws://127.0.0.1:5555/v1/connect");
    await env.host.handshake(sock, 1, deriveKeyNode(PAIRED)); // proves the worker holds the right key
    await settle(env.worker);
    assert.equal(env.chrome.storage.session.snapshot().conn.state, "connected");

    // Exercise the noisy paths too, so the log check means something.
    env.browser.failNext("windows.getAll");
    const failed = await env.host.command(sock, "observe");
    assert.equal(failed.error.reason, "failed");
    sock.serverClose(1006);
    await settle(env.worker);
    assert.ok(env.out.lines.length > 0, "something was logged");
    for (const secret of [...secretForms(PAIRED), ...secretForms(TOKEN)]) {
      assert.ok(!env.out.text().includes(secret), "secret leaked to console");
      assert.ok(!JSON.stringify(sock.sent).includes(secret), "secret sent on the socket");
      assert.ok(!JSON.stringify(env.chrome.storage.session.snapshot()).includes(secret), "secret leaked to session storage");
    }
  } finally {
    restore();
  }
});

test("pairing again replaces the connection; a refused code stores nothing", async () => {
  let answer = { ok: false, status: 403 };
  const env = await setup({
    fetch: async () => ({ ...answer, headers: { get: (h) => (h === "Retry-After" ? "30" : null) }, json: async () => ({ token: "tok_NEW" }) }),
  });
  const r1 = await env.chrome.runtime.sendMessage({ type: "pair", code: "000-000" });
  assert.equal(r1.ok, false);
  assert.match(r1.error, /HTTP 403/);
  answer = { ok: false, status: 429 };
  const r2 = await env.chrome.runtime.sendMessage({ type: "pair", code: "000-000" });
  assert.match(r2.error, /retry in 30 seconds/);
  assert.equal(env.chrome.storage.local.snapshot().key, KEY_B64, "old key kept after failures");
  const bad = await env.chrome.runtime.sendMessage({ type: "pair", code: "<script>", port: 80 });
  assert.equal(bad.ok, false);

  answer = { ok: true, status: 200 };
  const r3 = await env.chrome.runtime.sendMessage({ type: "pair", code: "111-222" });
  assert.deepEqual(r3, { ok: true });
  assert.equal(env.sock.readyState, 3, "old socket closed");
  const s2 = await env.host.waitSocket();
  await env.host.handshake(s2, 2, deriveKeyNode("tok_NEW"));
  assert.equal(env.chrome.storage.local.snapshot().key, deriveKeyNode("tok_NEW").toString("base64url"));
  assert.ok(!env.out.text().includes("tok_NEW"));
});

test("messages that do not come from our own pages are ignored", async () => {
  const env = await setup({ paired: false, fetch: async () => assert.fail("must not fetch") });
  const results = env.browser.events.runtimeMessage.dispatch(
    { type: "pair", code: "123-456" },
    { id: "someone-else", url: "https://evil.example/" },
    () => assert.fail("must not respond"),
  );
  assert.deepEqual(results, [false]);
  const fromTab = env.browser.events.runtimeMessage.dispatch(
    { type: "pair", code: "123-456" },
    { id: env.chrome.runtime.id, tab: { id: 5 } },
    () => assert.fail("must not respond"),
  );
  assert.deepEqual(fromTab, [false]);
  // A content script of ours (there are none) would carry the web page's url.
  const fromContentScript = env.browser.events.runtimeMessage.dispatch(
    { type: "pair", code: "123-456" },
    { id: env.chrome.runtime.id, tab: { id: 5 }, url: "https://evil.example/", origin: "https://evil.example" },
    () => assert.fail("must not respond"),
  );
  assert.deepEqual(fromContentScript, [false]);
  await settle(env.worker);
  assert.equal(env.chrome.storage.local.snapshot().token, undefined);
  assert.equal(env.chrome.storage.local.snapshot().key, undefined);
});

test("the popup page opened in a tab may pair (Chrome sets sender.tab for it)", async () => {
  // Found in real Chromium: chrome-extension://<id>/popup.html opened as a tab got no answer,
  // and the form said only "Pairing failed."
  const env = await setup({
    paired: false,
    fetch: async () => ({ ok: true, status: 200, headers: { get: () => null }, json: async () => ({ token: "tok_TAB" }) }),
  });
  const reply = await new Promise((resolve) => {
    const results = env.browser.events.runtimeMessage.dispatch(
      { type: "pair", code: "123-456", port: 5555 },
      { id: env.chrome.runtime.id, tab: { id: 7 }, url: `chrome-extension://${env.chrome.runtime.id}/popup.html` },
      resolve,
    );
    assert.deepEqual(results, [true], "answered asynchronously");
  });
  assert.deepEqual(reply, { ok: true });
  assert.equal(env.chrome.storage.local.snapshot().key, deriveKeyNode("tok_TAB").toString("base64url"));
  await settle(env.worker);
});
