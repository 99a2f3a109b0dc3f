// The handshake's cryptography (docs/extension-protocol.md "Handshake"). WebCrypto only.

export const utf8 = new TextEncoder();

export function b64url(bytes) {
  let bin = "";
  for (const b of new Uint8Array(bytes)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromB64url(s) {
  if (typeof s !== "string" || !/^[A-Za-z0-9_-]*$/.test(s)) throw new Error("not base64url");
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** k = SHA-256("tabwarden-key-v1\n" + token): what both sides keep instead of the token. */
export async function deriveKey(token, cryptoImpl = globalThis.crypto) {
  return new Uint8Array(await cryptoImpl.subtle.digest("SHA-256", utf8.encode(`tabwarden-key-v1\n${token}`)));
}

export const hostProofMessage = (nonceE, nonceH, epoch) => `tabwarden-host-v1\n${nonceE}\n${nonceH}\n${epoch}`;
export const extProofMessage = (nonceH, nonceE) => `tabwarden-ext-v1\n${nonceH}\n${nonceE}`;
export const KEY_ID_MESSAGE = "tabwarden-key-id-v1";
export const NONCE_RE = /^[A-Za-z0-9_-]{43}$/; // 32 bytes, base64url without padding

export function hmacKey(raw, cryptoImpl) {
  return cryptoImpl.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
}

export async function hmac(raw, message, cryptoImpl) {
  return new Uint8Array(await cryptoImpl.subtle.sign("HMAC", await hmacKey(raw, cryptoImpl), utf8.encode(message)));
}

/** The key id the hello names, so a host paired with another key answers 4401 at once. */
export async function keyId(raw, cryptoImpl = globalThis.crypto) {
  return b64url((await hmac(raw, KEY_ID_MESSAGE, cryptoImpl)).slice(0, 16));
}

/** Constant-time check of the host's proof (WebCrypto's verify). */
export async function verifyHostProof(raw, proof, nonceE, nonceH, epoch, cryptoImpl) {
  let sig;
  try {
    sig = fromB64url(proof);
  } catch {
    return false;
  }
  if (sig.length !== 32) return false;
  return cryptoImpl.subtle.verify("HMAC", await hmacKey(raw, cryptoImpl), sig, utf8.encode(hostProofMessage(nonceE, nonceH, epoch)));
}
