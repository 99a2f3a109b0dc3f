// Pairing from the popup: pair with a code, forget the pairing, reconnect, and the
// runtime.onMessage handler that only the extension's own pages reach.
//
// Part of the service worker: background.js's createWorker builds it with createPairing and
// registers onMessage. It holds no state: the key goes to chrome.storage.local, and the link
// is replaced or dropped through the connection's functions.

import { DEFAULT_PORT, clip } from "./shapes.js";
import { b64url, deriveKey } from "./handshake.js";

/**
 * Builds the pairing. deps: chrome (runtime), local (chrome.storage.local), now, fetch, crypto,
 * and connection (connection.js createConnection's setConn, ensureConnected, closeSocket,
 * cancelRetry, dialing, send).
 *
 * Returns pair, forget and onMessage.
 */
export function createPairing({ chrome, local, now, fetch: fetchImpl, crypto: cryptoImpl, connection }) {

  // ---- pairing and popup messages --------------------------------------------------------------

  async function pair(code, port) {
    code = typeof code === "string" ? code.trim() : "";
    if (!/^[A-Za-z0-9-]{1,64}$/.test(code)) return { ok: false, error: "enter the code printed by `tabwarden pair`" };
    if (port === undefined || port === null || port === "") port = DEFAULT_PORT;
    port = Number(port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, error: "port must be 1-65535" };

    let resp;
    try {
      resp = await fetchImpl(`http://127.0.0.1:${port}/v1/pair`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code }),
      });
    } catch (e) {
      const error = `cannot reach the tabwarden agent on 127.0.0.1:${port} (${e?.message ?? e})`;
      await connection.setConn({ lastError: error });
      return { ok: false, error };
    }
    if (!resp.ok) {
      const retry = resp.headers?.get?.("Retry-After");
      // The host explains a burned code ("run `tabwarden pair` again"); show its words.
      let said = "";
      try {
        const body = await resp.json();
        if (typeof body?.message === "string") said = clip(body.message, 300);
      } catch {
        /* no JSON body */
      }
      const error =
        resp.status === 429
          ? `too many attempts; retry in ${retry ?? "a few"} seconds`
          : `pairing refused (HTTP ${resp.status}${said ? `: ${said}` : ""}); run \`tabwarden pair\` for a fresh code`;
      await connection.setConn({ lastError: error });
      return { ok: false, error };
    }
    let token;
    try {
      token = (await resp.json())?.token;
    } catch {
      /* fall through */
    }
    if (typeof token !== "string" || token === "") {
      const error = "the agent answered without a token";
      await connection.setConn({ lastError: error });
      return { ok: false, error };
    }
    // Only the derived key is kept; the token itself is forgotten right here.
    const key = b64url(await deriveKey(token, cryptoImpl));
    token = null;
    await local.set({ key, port, pairedAt: now() });
    await local.remove("token");
    // A new key replaces the old connection, whatever state it was in. A dial already in
    // flight read the old key: let it finish, then replace its socket.
    const dialing = connection.dialing();
    if (dialing) await dialing;
    connection.closeSocket();
    connection.cancelRetry();
    await connection.setConn({ state: "connecting", epoch: null, lastError: null, attempt: 0, nextRetryAt: null, port });
    await connection.ensureConnected();
    return { ok: true };
  }

  /**
   * The popup's Forget button: tell the host to forget this pairing (when connected, on the
   * authenticated socket), close the socket, and drop the key. Pairing again is the way back.
   */
  async function forget() {
    const dialing = connection.dialing();
    if (dialing) await dialing;
    const hostTold = connection.send({ type: "forget" }); // on the live, welcomed socket only
    connection.closeSocket(1000, "pairing forgotten");
    connection.cancelRetry();
    await local.remove(["key", "token", "pairedAt"]);
    await connection.setConn({ state: "unpaired", epoch: null, lastError: null, attempt: 0, nextRetryAt: null });
    return { ok: true, hostTold };
  }

  // Only our own pages (the popup, also when it is opened as a tab at
  // chrome-extension://<id>/popup.html) talk to the worker. The extension has no content
  // scripts; if it ever gets some, their sender.url is the web page's, so they stay out.
  function fromOwnPage(sender) {
    if (sender?.id !== chrome.runtime.id || typeof sender?.url !== "string") return false;
    return sender.url.startsWith(`chrome-extension://${chrome.runtime.id}/`);
  }

  function onMessage(msg, sender, sendResponse) {
    if (!fromOwnPage(sender)) return false;
    switch (msg?.type) {
      case "pair":
        pair(msg.code, msg.port).then(sendResponse, (e) => sendResponse({ ok: false, error: String(e?.message ?? e) }));
        return true; // respond asynchronously
      case "forget":
        forget().then(sendResponse, (e) => sendResponse({ ok: false, error: String(e?.message ?? e) }));
        return true;
      case "reconnect":
        connection.setConn({ state: "connecting", attempt: 0 })
          .then(() => {
            connection.cancelRetry();
            return connection.ensureConnected();
          })
          .then(() => sendResponse({ ok: true }));
        return true;
      default:
        return false;
    }
  }

  return { pair, forget, onMessage };
}
