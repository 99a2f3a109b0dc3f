// The connection to the host: the connection status record the popup renders, the socket,
// the handshake (the host proves itself first), keepalive pings, and reconnecting with
// backoff.
//
// Part of the service worker: background.js's createWorker builds it with createConnection.
// The connection owns the process handles of the link (the socket, its timers, the chains that
// order its frames and its status writes): they die with the worker, and start() rebuilds the
// link from storage. Other parts reach the link only through the returned functions.

import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, DEFAULT_PORT, HANDSHAKE_TIMEOUT_MS, PING_INTERVAL_MS } from "./shapes.js";
import { NONCE_RE, b64url, deriveKey, extProofMessage, fromB64url, hmac, keyId, verifyHostProof } from "./handshake.js";

/**
 * Builds the connection. deps: chrome (runtime), session (store.js over
 * chrome.storage.session: the "conn" status record), local (chrome.storage.local: the pairing
 * key and port), now, log, setTimer, clearTimer, WebSocket, crypto, and execute(cmd) → the
 * result frame of one host command (background.js's dispatch).
 *
 * Returns setConn, send, sendEvent, ensureConnected, closeSocket, cancelRetry, dialing,
 * handshakeSettled, statusSettled and the live socket (a getter).
 */
export function createConnection({ chrome, session, local, now, log, setTimer, clearTimer, WebSocket: WebSocketImpl, crypto: cryptoImpl, execute }) {
  let ws = null; // the live WebSocket, if any
  let welcomed = null; // the socket the host has welcomed (events and results go only there)
  let connecting = null; // promise while a connect attempt reads storage and dials
  let pingTimer = null;
  let retryTimer = null;
  let handshakeTimer = null;
  let hsChain = Promise.resolve(); // frames of the current socket, handled in order
  let connChain = Promise.resolve(); // orders writes of the "conn" status record

  function setConn(patch) {
    // Serialized read-modify-write; the popup renders this record.
    connChain = connChain
      .then(async () => {
        const cur = (await session.get("conn")) ?? {};
        await session.set({ conn: { ...cur, ...patch, updatedAt: now() } });
      })
      .catch((e) => log.warn("tabwarden: storing connection state failed:", e?.message));
    return connChain;
  }

  // ---- socket ----------------------------------------------------------------------------------

  function send(frame) {
    return sendOn(ws, frame);
  }

  /**
   * Sends on one socket only if it is still the live, welcomed one. A reply to a command goes
   * out on the socket that carried the command or nowhere: after a reconnect (maybe to a
   * restarted agent whose command ids start over) an old command's reply must not reach the
   * new peer, where it could be matched to a different command.
   */
  function sendOn(sock, frame) {
    if (!sock || sock !== ws || sock !== welcomed || sock.readyState !== 1 /* OPEN */) return false;
    sock.send(JSON.stringify(frame));
    return true;
  }

  function sendEvent(event, body) {
    send({ type: "event", event, ...body });
  }

  function stopPing() {
    if (pingTimer !== null) clearTimer(pingTimer);
    pingTimer = null;
  }

  function stopHandshakeTimer() {
    if (handshakeTimer !== null) clearTimer(handshakeTimer);
    handshakeTimer = null;
  }

  // Chrome keeps a service worker alive while its WebSocket carries traffic at least every 30 s
  // (Chrome 116+); the host expects a frame every 20 s. One ping per 20 s satisfies both.
  function schedulePing() {
    stopPing();
    pingTimer = setTimer(() => {
      pingTimer = null;
      if (send({ type: "ping" })) schedulePing();
    }, PING_INTERVAL_MS);
  }

  async function scheduleReconnect() {
    if (retryTimer !== null) return;
    await connChain; // read the attempt count after every queued status write has landed
    const conn = (await session.get("conn")) ?? {};
    const attempt = conn.attempt ?? 0;
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** attempt);
    await setConn({ attempt: attempt + 1, nextRetryAt: now() + delay });
    if (retryTimer !== null) return;
    retryTimer = setTimer(() => {
      retryTimer = null;
      ensureConnected();
    }, delay);
  }

  /** The pairing key from storage; an older build's raw token is turned into the key here. */
  async function loadKey() {
    const { key, token } = await local.get(["key", "token"]);
    if (typeof key === "string" && key !== "") {
      try {
        const raw = fromB64url(key);
        if (raw.length === 32) return raw;
      } catch {
        /* fall through: unusable */
      }
      log.warn("tabwarden: the stored pairing key is unusable; pair again");
      return null;
    }
    if (typeof token === "string" && token !== "") {
      const raw = await deriveKey(token, cryptoImpl);
      await local.set({ key: b64url(raw) });
      await local.remove("token");
      return raw;
    }
    return null;
  }

  /**
   * Dials the host if paired and not already connected or dialing. Safe to call from any
   * trigger (start, alarm, retry timer, onStartup); concurrent calls share one attempt.
   */
  function ensureConnected() {
    if (ws || connecting) return connecting ?? Promise.resolve();
    connecting = (async () => {
      try {
        await connChain;
        const key = await loadKey();
        const { port } = await local.get("port");
        const conn = (await session.get("conn")) ?? {};
        if (!key) {
          await setConn({ state: "unpaired" });
          return;
        }
        // 4401: the host does not know this key (revoked by a newer pairing or `tabwarden
        // unpair`). A host that failed to prove itself is not ours. Retrying would only hammer
        // it (or feed an impostor): wait for the user to press Reconnect or pair again.
        if (conn.state === "unauthorized" || conn.state === "host_unverified") return;
        if (ws) return;
        if (retryTimer !== null) {
          clearTimer(retryTimer);
          retryTimer = null;
        }
        dial(key, Number.isInteger(port) ? port : DEFAULT_PORT);
      } catch (e) {
        log.warn("tabwarden: connect failed:", e?.message);
      } finally {
        connecting = null;
      }
    })();
    return connecting;
  }

  function dial(key, port) {
    const url = `ws://127.0.0.1:${port}/v1/connect`;
    let sock;
    try {
      sock = new WebSocketImpl(url);
    } catch (e) {
      setConn({ state: "disconnected", lastError: `cannot open ${url}: ${e?.message}` });
      scheduleReconnect();
      return;
    }
    ws = sock;
    welcomed = null;
    setConn({ state: "connecting", port });
    // The handshake of this socket: hello → challenge (the host proves itself) → auth (we
    // prove ourselves) → welcome. Frames are handled one at a time, in order, on this chain,
    // because verifying a proof is asynchronous.
    const hs = { phase: "opening", nonceE: null, nonceH: null, epoch: null };
    let chain = Promise.resolve();
    const enqueue = (fn) => {
      chain = chain.then(fn).catch((e) => log.warn("tabwarden: frame:", e?.message));
      hsChain = chain;
    };
    stopHandshakeTimer();
    handshakeTimer = setTimer(() => {
      handshakeTimer = null;
      if (ws !== sock || welcomed === sock) return;
      dropSocket(sock, 1000, "handshake timeout");
      setConn({ state: "disconnected", epoch: null, lastError: "the host did not complete the handshake in time" });
      scheduleReconnect();
    }, HANDSHAKE_TIMEOUT_MS);

    sock.onopen = () => {
      enqueue(async () => {
        if (ws !== sock) return;
        const version = chrome.runtime.getManifest?.().version ?? "0";
        hs.nonceE = b64url(cryptoImpl.getRandomValues(new Uint8Array(32)));
        const kid = await keyId(key, cryptoImpl);
        if (ws !== sock || sock.readyState !== 1) return;
        // No secret here: a fresh nonce, and the key's id (a one-way function of the key).
        sock.send(JSON.stringify({ type: "hello", version, nonce: hs.nonceE, kid }));
        hs.phase = "challenge";
      });
    };
    sock.onmessage = (ev) => {
      if (ws !== sock) return;
      const data = ev.data;
      enqueue(() => onFrame(sock, hs, key, data));
    };
    sock.onerror = () => {
      // A close event always follows; it carries the useful information.
    };
    sock.onclose = (ev) => {
      if (ws !== sock) return; // an old socket we replaced or dropped on purpose
      ws = null;
      welcomed = null;
      stopPing();
      stopHandshakeTimer();
      const code = ev?.code ?? 1006;
      if (code === 4401) {
        setConn({ state: "unauthorized", epoch: null, lastError: "the host does not know this pairing (4401): pair again" });
        return;
      }
      const why = code === 4409 ? "another connection is active (4409)" : `closed (${code}${ev?.reason ? ` ${ev.reason}` : ""})`;
      setConn({ state: "disconnected", epoch: null, lastError: why });
      scheduleReconnect();
    };
  }

  /** Detaches and closes a socket; its close event is then ignored. */
  function dropSocket(sock, code, reason) {
    if (ws === sock) ws = null;
    if (welcomed === sock) welcomed = null;
    stopPing();
    stopHandshakeTimer();
    try {
      sock.close(code, reason);
    } catch {
      /* already closed */
    }
  }

  /**
   * The peer on this port did not prove that it knows the pairing key: it is not our host
   * (maybe another local user who bound the port while the agent was down). Close, obey
   * nothing, tell the user, and do not retry by ourselves.
   */
  function hostFailed(sock, why) {
    dropSocket(sock, 4403, "host failed to prove itself");
    log.warn(`tabwarden: host failed to prove itself (${why}); not retrying`);
    return setConn({
      state: "host_unverified",
      epoch: null,
      lastError: `host failed to prove itself (${why}); not retrying: press Reconnect once the real agent runs, or pair again`,
      nextRetryAt: null,
    });
  }

  async function onFrame(sock, hs, key, data) {
    if (ws !== sock) return;
    let msg;
    try {
      msg = JSON.parse(typeof data === "string" ? data : String(data));
    } catch {
      msg = null;
    }
    if (hs.phase !== "welcomed") {
      // Until the host has proven itself and welcomed us, exactly the handshake's frames in
      // their order; anything else (a bare welcome, a command) is an impostor's.
      if (hs.phase === "challenge" && msg?.type === "challenge") {
        const { nonce, epoch, proof } = msg;
        if (typeof nonce !== "string" || !NONCE_RE.test(nonce) || !Number.isSafeInteger(epoch) || epoch < 1 || typeof proof !== "string") {
          return hostFailed(sock, "malformed challenge");
        }
        if (!(await verifyHostProof(key, proof, hs.nonceE, nonce, epoch, cryptoImpl))) {
          return hostFailed(sock, "wrong proof");
        }
        if (ws !== sock || sock.readyState !== 1) return;
        hs.nonceH = nonce;
        hs.epoch = epoch;
        sock.send(JSON.stringify({ type: "auth", proof: b64url(await hmac(key, extProofMessage(nonce, hs.nonceE), cryptoImpl)) }));
        hs.phase = "welcome";
        return;
      }
      if (hs.phase === "welcome" && msg?.type === "welcome" && msg.epoch === hs.epoch) {
        hs.phase = "welcomed";
        welcomed = sock;
        stopHandshakeTimer();
        setConn({ state: "connected", epoch: hs.epoch, lastError: null, attempt: 0, nextRetryAt: null, connectedAt: now() });
        schedulePing();
        return;
      }
      return hostFailed(sock, msg?.type ? `unexpected ${String(msg.type).slice(0, 32)} frame before the proof` : "unexpected frame");
    }
    switch (msg?.type) {
      case "pong":
      case "welcome":
        return;
      case "command":
        if (typeof msg.id !== "string") return; // cannot reply without an id
        // The reply goes back on this socket only (see sendOn).
        execute(msg).then((reply) => sendOn(sock, reply));
        return;
      default:
        return;
    }
  }

  function closeSocket(code = 1000, reason = "re-pairing") {
    const sock = ws;
    ws = null; // detach first so its close event is ignored
    welcomed = null;
    stopPing();
    stopHandshakeTimer();
    if (sock) {
      try {
        sock.close(code, reason);
      } catch {
        /* already closed */
      }
    }
  }

  /** Stops a pending reconnect (the user asked for one now, or paired anew). */
  function cancelRetry() {
    if (retryTimer !== null) clearTimer(retryTimer);
    retryTimer = null;
  }

  return {
    setConn,
    send,
    sendEvent,
    ensureConnected,
    closeSocket,
    cancelRetry,
    /** The connect attempt in flight (it reads the key and dials), or null. */
    dialing: () => connecting,
    /** Resolves once the frames received so far have been handled. */
    handshakeSettled: () => hsChain,
    /** Resolves once the status writes queued so far have landed. */
    statusSettled: () => connChain,
    /** The live socket, if any. */
    get socket() {
      return ws;
    },
  };
}
