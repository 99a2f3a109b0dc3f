// Package link is a TCP link a test puts between a role and what it talks to
// (the agent and the API server, the agent and Chromium's DevTools port), to
// break the path the way networks break: a partition, where nothing passes and
// nobody is told (bytes are held until the link heals, as TCP retransmits them
// across a short outage); a reset, where every connection drops at once (a
// restarted load balancer or NAT); and a lossy path, where a segment is now
// and then lost and its retransmission arrives late.
//
// It is a user-space relay: this machine's kernel has no netem (`tc qdisc …
// netem` reports "Specified qdisc kind is unknown"), so the loss is emulated
// by holding a chunk for the retransmission timeout rather than by dropping a
// packet. It stands between two addresses on loopback or in a test's own
// network namespaces, never anything else.
package link

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Link relays every connection made to its address to the target.
type Link struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	up     *sync.Cond // broadcast when the link heals or closes
	conns  map[net.Conn]struct{}
	down   bool // partitioned: bytes and new connections wait for Heal
	refuse bool // dropped: new connections are refused until Heal
	loss   float64
	stall  time.Duration
	rnd    *rand.Rand
	done   bool
	stats  Stats
}

// Stats counts what the link did.
type Stats struct {
	// Connections is how many connections were relayed; Resets how many a
	// Reset dropped; Held how many chunks waited for a heal; Lost how many
	// chunks were held as lost segments.
	Connections, Resets, Held, Lost int
}

// New listens on a free loopback port and relays to target (host:port).
func New(target string) (*Link, error) {
	return Listen("127.0.0.1:0", target)
}

// Listen relays connections made to addr to target.
func Listen(addr, target string) (*Link, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &Link{ln: ln, target: target, conns: map[net.Conn]struct{}{}, rnd: rand.New(rand.NewPCG(1, 2))}
	l.up = sync.NewCond(&l.mu)
	go l.accept()
	return l, nil
}

// Addr is the link's host:port, to give the role instead of the target's.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Cut partitions the link: nothing passes either way and no connection is
// told; new connections are accepted and wait. Everything held flows on Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
}

// Drop takes the far side away: every connection drops (Reset) and new ones
// are refused until Heal, as when the peer's host is down.
func (l *Link) Drop() {
	l.Reset()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse = true
}

// Heal ends a partition or a Drop.
func (l *Link) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down, l.refuse = false, false
	l.up.Broadcast()
}

// Down reports whether the link is partitioned.
func (l *Link) Down() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}

// Reset drops every connection at once; new ones are relayed as before (or
// wait, while the link is cut).
func (l *Link) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		_ = c.Close() // dropping it is the point
		delete(l.conns, c)
	}
	l.stats.Resets++
}

// Lossy makes each chunk relayed from now on, with probability p, a lost
// segment: it is held for stall (the sender's retransmission timeout) before
// it, and everything after it on its connection, goes on. p = 0 ends it.
func (l *Link) Lossy(p float64, stall time.Duration, seed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loss, l.stall, l.rnd = p, stall, rand.New(rand.NewPCG(seed, 2))
}

// Stats reports what the link did so far.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Close stops the link and drops every connection.
func (l *Link) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	l.done = true
	for c := range l.conns {
		_ = c.Close() // closing the link
	}
	clear(l.conns)
	l.up.Broadcast()
	l.mu.Unlock()
	return err
}

func (l *Link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.relay(c)
	}
}

// relay waits while the link is cut, then dials the target and copies both
// ways until either side closes.
func (l *Link) relay(c net.Conn) {
	if !l.track(c) {
		_ = c.Close() // the link is closed or refusing
		return
	}
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := d.DialContext(ctx, "tcp", l.target)
	cancel()
	if err != nil || !l.track(up) {
		l.untrack(c)
		if up != nil {
			_ = up.Close() // the link is closed
		}
		return
	}
	l.mu.Lock()
	l.stats.Connections++
	l.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); l.copy(up, c) }()
	go func() { defer wg.Done(); l.copy(c, up) }()
	wg.Wait()
	l.untrack(c)
	l.untrack(up)
}

// track waits while the link is cut and registers the connection; it reports
// false once the link is closed.
func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.down && !l.done {
		l.up.Wait()
	}
	if l.done || l.refuse {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Link) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	_ = c.Close() // the other side is done
}

// copy relays src to dst chunk by chunk: a chunk read while the link is cut
// waits for the heal, a lost one waits for its retransmission. When src ends,
// dst is closed for writing (or closed).
func (l *Link) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !l.pass() {
				_ = dst.Close() // the link is closed
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close() // the other side is gone
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // half-close, as the sender did
					return
				}
			}
			_ = dst.Close() // the sender is gone
			return
		}
	}
}

// pass waits until a chunk may go on: while the link is cut, and for a lost
// segment's retransmission. It reports false once the link is closed.
func (l *Link) pass() bool {
	l.mu.Lock()
	held := false
	for l.down && !l.done {
		if !held {
			held = true
			l.stats.Held++
		}
		l.up.Wait()
	}
	if l.done {
		l.mu.Unlock()
		return false
	}
	var stall time.Duration
	if l.loss > 0 && l.rnd.Float64() < l.loss {
		stall = l.stall
		l.stats.Lost++
	}
	l.mu.Unlock()
	if stall > 0 {
		time.Sleep(stall)
	}
	return true
}
