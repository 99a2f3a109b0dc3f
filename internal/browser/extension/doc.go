// Package extension is the agent's `extension` browser driver: a loopback server
// (the host) for tabwarden's first-party MV3 extension, which is its only client.
//
// The wire contract is docs/extension-protocol.md. In short:
//
//   - The host listens on 127.0.0.1 only and refuses non-loopback peers, any Host
//     header other than 127.0.0.1:<port> / localhost:<port> (DNS rebinding), and any
//     Origin that is not a chrome-extension:// origin (for /v1/connect: exactly the
//     paired one). Web pages are refused for fetch and WebSocket alike.
//   - Pairing: `tabwarden pair` asks the running agent for a single-use code valid
//     five minutes over a Unix socket in the state directory (same OS user only);
//     the extension trades it at POST /v1/pair for a random token. Only sha256(token)
//     and the paired origin are stored, durably (mode 0600). Pairing again revokes
//     the previous token and drops a connection that used it. Wrong codes are
//     rate-limited with an escalating lockout.
//   - GET /v1/connect is the WebSocket: hello{token} within 5 s, welcome{epoch}; one
//     connection at a time; frames of at most 1 MiB.
//
// Host.Driver() is the browser.Browser on top of that connection (a separate type
// because Host.Close ends the server): it keeps a model of the profile's windows and
// tabs from `observe` and the extension's events, and turns Open/Close/Adopt into
// curated commands. Act is refused for now. The token and its hash are never logged.
package extension
