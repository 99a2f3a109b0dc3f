package fuzz

import (
	"fmt"
	"math/rand/v2"
)

// kind is one kind of operation.
type kind int

const (
	kSession kind = iota
	kOpen
	kSpawnPopup
	kSpawnTab
	kActSpawn
	kUserWindow
	kUserCloseUser
	kUserCloseOwned
	kBind
	kAck
	kFinish
	kDeleteSession
	kDeleteWindow
	kForgeUser
	kForgeAgent
	kToggleController
	kToggleAgent
	kToggleBrowser
	kQuiesce
	kCutAPI
	kDropAPI
	kLossyAPI
	nKinds
)

var kindNames = [...]string{"session", "open", "spawn-popup", "spawn-tab", "act-spawn", "user-window", "user-close-user-tab", "user-close-owned-page", "bind", "ack", "finish", "delete-session", "delete-window", "forge-as-user", "forge-as-agent", "toggle-controller", "toggle-agent", "toggle-browser", "quiesce", "cut-api-link", "drop-api-link", "lossy-api-link"}

// weights of the kinds in a random sequence.
var weights = [nKinds]int{
	kSession: 6, kOpen: 14, kSpawnPopup: 6, kSpawnTab: 6, kActSpawn: 4,
	kUserWindow: 4, kUserCloseUser: 3, kUserCloseOwned: 3, kBind: 4, kAck: 10,
	kFinish: 3, kDeleteSession: 4, kDeleteWindow: 3, kForgeUser: 1, kForgeAgent: 2,
	kToggleController: 2, kToggleAgent: 2, kToggleBrowser: 2, kQuiesce: 8,
	kCutAPI: 2, kDropAPI: 1, kLossyAPI: 1,
}

// op is one operation. A and B pick among the candidates at the time it runs
// (modulo their number), so that any subsequence is still a valid sequence.
type op struct {
	K    kind
	A, B int
}

func (o op) String() string { return fmt.Sprintf("%s(%d,%d)", kindNames[o.K], o.A, o.B) }

// generate returns n random operations from seed.
func generate(seed int64, n int) []op {
	r := rand.New(rand.NewPCG(uint64(seed), 0x7ab3a4de))
	total := 0
	for _, w := range weights {
		total += w
	}
	ops := make([]op, n)
	for i := range ops {
		x := r.IntN(total)
		k := kind(0)
		for ; x >= weights[k]; k++ {
			x -= weights[k]
		}
		ops[i] = op{K: k, A: r.IntN(1 << 16), B: r.IntN(1 << 16)}
	}
	return ops
}
