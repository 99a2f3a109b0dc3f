package extension

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
)

// The handshake's cryptography (docs/extension-protocol.md "Handshake"). Both sides
// derive the same key from the token the pairing handed out, and from then on only
// prove that they know it: the token, the key, or anything replayable never crosses
// the socket.
//
//	k      = SHA-256("tabwarden-key-v1\n" + token)
//	kid    = base64url(HMAC(k, "tabwarden-key-id-v1")[:16])
//	host   = HMAC(k, "tabwarden-host-v1\n" + nonceE + "\n" + nonceH + "\n" + epoch)
//	ext    = HMAC(k, "tabwarden-ext-v1\n" + nonceH + "\n" + nonceE)
//
// Nonces are 32 random bytes, base64url without padding; epoch is decimal.

const (
	keyBytes   = 32
	nonceBytes = 32
	nonceChars = 43 // base64url of 32 bytes, no padding
)

var b64 = base64.RawURLEncoding

// deriveKey is k for a token.
func deriveKey(token string) [keyBytes]byte {
	return sha256.Sum256([]byte("tabwarden-key-v1\n" + token))
}

func mac(k [keyBytes]byte, msg string) []byte {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// keyID names a key without revealing it, so that a host paired with another key
// can answer 4401 right away instead of a challenge the extension must refuse.
func keyID(k [keyBytes]byte) string { return b64.EncodeToString(mac(k, "tabwarden-key-id-v1")[:16]) }

func hostProof(k [keyBytes]byte, nonceE, nonceH string, epoch int64) []byte {
	return mac(k, "tabwarden-host-v1\n"+nonceE+"\n"+nonceH+"\n"+strconv.FormatInt(epoch, 10))
}

func extProof(k [keyBytes]byte, nonceH, nonceE string) []byte {
	return mac(k, "tabwarden-ext-v1\n"+nonceH+"\n"+nonceE)
}

// validNonce: exactly 32 bytes in base64url without padding.
func validNonce(s string) bool {
	if len(s) != nonceChars {
		return false
	}
	b, err := b64.DecodeString(s)
	return err == nil && len(b) == nonceBytes
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("extension host: crypto/rand failed: " + err.Error())
	}
	return b
}

func newNonce() string { return b64.EncodeToString(randomBytes(nonceBytes)) }

// randomEpochStart is where a host process starts counting connections: random, so
// that nothing of one process (an epoch, a command id) is mistaken for another's.
// Below 2^40, so it stays an exact integer in JavaScript.
func randomEpochStart() int64 {
	return int64(binary.BigEndian.Uint64(randomBytes(8))%(1<<40)) + 1
}
