// Package extension is the agent's `extension` browser driver: a loopback server
// (the host) for tabwarden's first-party MV3 extension, which is its only client.
//
// The wire contract is docs/extension-protocol.md. In short:
//
//   - The host listens on 127.0.0.1 only and refuses non-loopback peers, any Host
//     header other than 127.0.0.1:<port> / localhost:<port> (DNS rebinding), and any
//     Origin but chrome-extension://<pinned id> (DefaultExtensionID, the id the
//     manifest key gives extension/; Options.ExtensionID overrides it). Web pages and
//     other extensions are refused for fetch and WebSocket alike. Headers, and the
//     body of POST /v1/pair, must arrive within ReadTimeout; at most MaxConns
//     connections are served at once, more are closed on accept.
//   - Pairing: `tabwarden pair` asks the running agent for a single-use code valid
//     five minutes over a Unix socket in the state directory (same OS user only);
//     the extension trades it at POST /v1/pair for a random token. Both sides keep
//     only the key derived from it, k = SHA-256("tabwarden-key-v1\n"+token); the host
//     stores k and the paired origin, durably (mode 0600). Pairing again revokes the
//     previous key and drops a connection that used it; `tabwarden unpair` (or the
//     extension's Forget) forgets it. Wrong codes count against the current code
//     only: 20 burn it; there is no time lockout.
//   - GET /v1/connect is the WebSocket: a mutual HMAC challenge-response keyed by k
//     (hello, challenge with the host's proof, auth with the extension's proof,
//     welcome{epoch}) within 5 s; no secret crosses the socket. One connection at a
//     time; frames of at most 1 MiB. Epochs start at a random value per process and
//     command ids carry a random per-process prefix; results are matched only on
//     the connection that carried the command.
//
// Host.Driver() is the browser.Browser on top of that connection (a separate type
// because Host.Close ends the server): it keeps a model of the profile's windows,
// tabs and the extension's ownership ledger from `observe`, `records` and the
// extension's events, and turns Open/Close/Adopt/Bind/Release into curated
// commands. Act is refused for now. The token and the key are never logged.
package extension
