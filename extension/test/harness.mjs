// Test harness: a fake host (WebSocket server side), a fake clock for the worker's timers,
// console capture, and a helper that boots a paired, connected worker against a fake Chrome.

import assert from "node:assert/strict";
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createFakeChrome, tick } from "./fake-chrome.mjs";
import { createWorker } from "../background.js";

export { tick };

/** Lets queued tasks, storage writes and setImmediate-based browser events run. */
export async function settle(worker, rounds = 3) {
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < 30; i++) await tick();
    if (worker) await worker.idle();
  }
}

/** Waits (real time, bounded) until predicate() is truthy. */
export async function until(predicate, what = "condition", ms = 2000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await predicate();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await tick();
  }
}

/** Manual timers, injected into the worker; the fake browser keeps using real setImmediate. */
export class FakeClock {
  constructor(start = 1_700_000_000_000) {
    this.t = start;
    this.timers = new Map();
    this.seq = 0;
    this.now = () => this.t;
    this.setTimeout = (fn, ms) => {
      const id = ++this.seq;
      this.timers.set(id, { at: this.t + Math.max(0, ms ?? 0), fn, ms });
      return id;
    };
    this.clearTimeout = (id) => {
      this.timers.delete(id);
    };
  }
  /** Delays (ms from now) of the timers still pending. */
  pending() {
    return [...this.timers.values()].map((x) => x.at - this.t).sort((a, b) => a - b);
  }
  clearAll() {
    this.timers.clear();
  }
  async advance(ms, worker) {
    const end = this.t + ms;
    for (;;) {
      let next = null;
      for (const [id, x] of this.timers) if (x.at <= end && (!next || x.at < next[1].at)) next = [id, x];
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
      await settle(worker, 1);
    }
    this.t = end;
    await settle(worker, 1);
  }
}

/** Records console output so tests can assert the token never appears. */
export function captureConsole() {
  const lines = [];
  const fake = {};
  for (const m of ["log", "info", "warn", "error", "debug"]) {
    fake[m] = (...args) => lines.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  }
  return { console: fake, lines, text: () => lines.join("\n") };
}

/** Patches globalThis.console for code that uses it directly; returns restore(). */
export function patchGlobalConsole(capture) {
  const saved = {};
  for (const m of Object.keys(capture.console)) {
    saved[m] = console[m];
    console[m] = capture.console[m];
  }
  return () => Object.assign(console, saved);
}

/** The host's side of the loopback WebSocket. */
export function createFakeHost() {
  const sockets = [];
  class FakeWebSocket {
    static CONNECTING = 0;
    static OPEN = 1;
    static CLOSING = 2;
    static CLOSED = 3;
    constructor(url) {
      this.url = url;
      this.readyState = 0;
      this.sent = [];
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      sockets.push(this);
    }
    // --- client side (called by the worker) ---
    send(data) {
      if (this.readyState !== 1) throw new Error("InvalidStateError: socket not open");
      if (typeof data !== "string") throw new Error("expected a text frame");
      this.sent.push(JSON.parse(data));
    }
    close(code = 1000, reason = "") {
      if (this.readyState >= 2) return;
      this.readyState = 3;
      setImmediate(() => this.onclose?.({ code, reason, wasClean: true }));
    }
    // --- server side (called by tests) ---
    accept() {
      this.readyState = 1;
      this.onopen?.({});
    }
    deliver(obj) {
      this.onmessage?.({ data: typeof obj === "string" ? obj : JSON.stringify(obj) });
    }
    serverClose(code = 1001, reason = "") {
      this.readyState = 3;
      this.onclose?.({ code, reason, wasClean: code !== 1006 });
    }
    /** The connection dies with the worker process: no close event reaches anyone. */
    drop() {
      this.readyState = 3;
    }
    frames(type) {
      return this.sent.filter((f) => !type || f.type === type);
    }
    events(name) {
      return this.sent.filter((f) => f.type === "event" && (!name || f.event === name));
    }
    waitFrame(pred, what = "frame") {
      return until(() => this.sent.find(pred), what);
    }
  }

  let nextId = 0;
  let handedOut = 0;
  const host = {
    WebSocket: FakeWebSocket,
    sockets,
    latest: () => sockets[sockets.length - 1],
    /** Resolves with the next socket the worker opens (each socket is handed out once). */
    async waitSocket() {
      const n = ++handedOut;
      return until(() => sockets[n - 1], `socket #${n}`);
    },
    /**
     * Plays the real host's side of the handshake with the pairing key (node:crypto, not the
     * worker's WebCrypto): accepts, reads hello, proves itself in a challenge, checks the
     * extension's auth proof, answers welcome. Returns the hello.
     */
    async handshake(sock, epoch = 1, key = KEY) {
      sock.accept();
      const hello = await sock.waitFrame((f) => f.type === "hello", "hello");
      const nonceH = randomBytes(32).toString("base64url");
      sock.deliver({ type: "challenge", nonce: nonceH, epoch, proof: hostProof(key, hello.nonce, nonceH, epoch) });
      const auth = await sock.waitFrame((f) => f.type === "auth", "auth");
      const want = Buffer.from(extProof(key, nonceH, hello.nonce), "base64url");
      const got = Buffer.from(String(auth.proof), "base64url");
      if (got.length !== want.length || !timingSafeEqual(got, want)) throw new Error("the extension's auth proof is wrong");
      sock.deliver({ type: "welcome", epoch });
      return hello;
    },
    /** Sends a command and waits for its result frame. */
    async command(sock, op, args = {}) {
      const id = `cmd-${++nextId}`;
      sock.deliver({ type: "command", id, op, args });
      return sock.waitFrame((f) => f.type === "result" && f.id === id, `result of ${op}`);
    },
  };
  return host;
}

// What the tests' worker loads as page.js: the fake page (setPage) answers in its place, so
// the source only has to be recognizable in the expression the worker evaluates.
export const PAGE_SOURCE = "// page.js header\n(function tabwardenPage(op, args) {\n  return { test: true };\n})";

export const TOKEN = "tok_Zx9-SECRET-do-not-log_4f2a";

// The protocol's derivations, written independently of background.js (docs/extension-protocol.md).
export const deriveKeyNode = (token) => createHash("sha256").update(`tabwarden-key-v1\n${token}`).digest();
export const KEY = deriveKeyNode(TOKEN);
export const KEY_B64 = KEY.toString("base64url");
export const hostProof = (key, nonceE, nonceH, epoch) =>
  createHmac("sha256", key).update(`tabwarden-host-v1\n${nonceE}\n${nonceH}\n${epoch}`).digest("base64url");
export const extProof = (key, nonceH, nonceE) => createHmac("sha256", key).update(`tabwarden-ext-v1\n${nonceH}\n${nonceE}`).digest("base64url");
export const keyIdNode = (key) => createHmac("sha256", key).update("tabwarden-key-id-v1").digest().subarray(0, 16).toString("base64url");
/** Every form in which the pairing secret could leak. */
export const secretForms = (token = TOKEN) => {
  const k = deriveKeyNode(token);
  return [token, k.toString("base64url"), k.toString("base64"), k.toString("hex")];
};

/**
 * A fake browser with one user window (one committed user tab, focused), a paired and
 * connected worker, and handles for everything.
 */
export async function setup({ paired = true, connect = true, fetch } = {}) {
  const chrome = createFakeChrome();
  const browser = chrome._browser;
  const host = createFakeHost();
  const clock = new FakeClock();
  const out = captureConsole();
  const user = browser.openWindow({ url: "https://mail.example.com/inbox", focused: true });
  if (paired) await chrome.storage.local.set({ key: KEY_B64, port: 47321, pairedAt: 1 });

  const env = { chrome, browser, host, clock, out, user };
  env.newWorker = () => {
    const w = createWorker(chrome, {
      WebSocket: host.WebSocket,
      fetch: fetch ?? (async () => { throw new Error("no fetch in this test"); }),
      setTimeout: clock.setTimeout,
      clearTimeout: clock.clearTimeout,
      now: clock.now,
      console: out.console,
      loadPageSource: async () => PAGE_SOURCE,
    });
    w.register();
    return w;
  };
  env.worker = env.newWorker();
  if (paired && connect) {
    await env.worker.start();
    env.sock = await host.waitSocket();
    await host.handshake(env.sock);
    await settle(env.worker);
  }
  env.cmd = (op, args) => host.command(env.sock, op, args);
  env.settle = () => settle(env.worker);
  return env;
}

/** ok: the frame answered ok; its result. */
export const ok = (frame) => {
  assert.equal(frame.ok, true, `expected ok, got ${JSON.stringify(frame.error)}`);
  return frame.result;
};

/** refused: the frame was refused with reason (and a message); its error. */
export const refused = (frame, reason) => {
  assert.equal(frame.ok, false, `expected refusal ${reason}, got ${JSON.stringify(frame.result)}`);
  assert.equal(frame.error.reason, reason, frame.error.message);
  assert.equal(typeof frame.error.message, "string");
  return frame.error;
};
