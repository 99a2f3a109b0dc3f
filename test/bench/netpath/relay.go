// Package netpath gives the benchmark a network path with a round-trip time:
// a TCP relay that delays each direction's bytes by a one-way delay (half the
// RTT) in user space, and a network namespace joined to the host's by a veth
// pair (netns.go), for a Chromium that is reached over the veth rather than
// loopback.
//
// The delay is user space because this kernel has no netem (`tc qdisc add …
// netem` says "Specified qdisc kind is unknown"): every chunk the relay reads
// is stamped and written on at its read time plus the delay, in order, while
// reading goes on, so the path adds latency without throttling throughput (a
// chunk is not held behind the previous one's delay, only behind its write).
//
// The relay also counts the WebSocket messages the client sends (a CDP
// client's commands), by method, so that the benchmark can say how many CDP
// round trips an operation made over the path.
package netpath

import (
	"bytes"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Relay accepts TCP connections and joins each to a new connection to its
// target, delaying both directions by the one-way delay.
type Relay struct {
	ln     net.Listener
	target string
	oneWay atomic.Int64 // nanoseconds
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
	count Counts
	done  bool
}

// Counts is what a client sent through a relay: its WebSocket messages (text
// or binary, each counted once at its final frame) by CDP method ("?" when
// the message names none or is compressed), and its turns.
//
// A turn is a run of messages the client sent back to back, with nothing
// from the server delivered to it in between: a client that waits for each
// reply before its next command takes a turn per command, one that pipelines
// commands takes one turn for them. The server's events count as something
// delivered, so turns overstate the round trips a client waited for when
// events interleave; they show a cut round trip as one turn fewer.
type Counts struct {
	Messages int
	Turns    int
	ByMethod map[string]int
}

// Minus is c less an earlier snapshot.
func (c Counts) Minus(before Counts) Counts {
	out := Counts{Messages: c.Messages - before.Messages, Turns: c.Turns - before.Turns, ByMethod: map[string]int{}}
	for m, n := range c.ByMethod {
		if d := n - before.ByMethod[m]; d != 0 {
			out.ByMethod[m] = d
		}
	}
	return out
}

// String lists the methods, most frequent first: "Target.getTargets 2, Target.createTarget 1".
func (c Counts) String() string {
	type kv struct {
		m string
		n int
	}
	var all []kv
	for m, n := range c.ByMethod {
		all = append(all, kv{m, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].m < all[j].m
	})
	parts := make([]string, 0, len(all))
	for _, e := range all {
		parts = append(parts, e.m+" "+strconv.Itoa(e.n))
	}
	return strings.Join(parts, ", ")
}

// Listen starts a relay on addr (e.g. "127.0.0.1:0") to target (host:port).
func Listen(addr, target string) (*Relay, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Relay{ln: ln, target: target, conns: map[net.Conn]bool{}, count: Counts{ByMethod: map[string]int{}}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's listening address (host:port).
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// SetRTT sets the round-trip time the relay adds: half of it each way. It
// applies to the bytes read from then on.
func (r *Relay) SetRTT(rtt time.Duration) { r.oneWay.Store(int64(rtt / 2)) }

// RTT is the round-trip time the relay adds.
func (r *Relay) RTT() time.Duration { return 2 * time.Duration(r.oneWay.Load()) }

// Counts is a snapshot of what clients have sent so far.
func (r *Relay) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Counts{Messages: r.count.Messages, Turns: r.count.Turns, ByMethod: make(map[string]int, len(r.count.ByMethod))}
	for m, n := range r.count.ByMethod {
		out.ByMethod[m] = n
	}
	return out
}

func (r *Relay) record(method string, newTurn bool) {
	r.mu.Lock()
	r.count.Messages++
	if newTurn {
		r.count.Turns++
	}
	r.count.ByMethod[method]++
	r.mu.Unlock()
}

// Close stops accepting, drops every connection and waits for the relay's
// goroutines.
func (r *Relay) Close() {
	_ = r.ln.Close() // Accept returns; nothing else to report
	r.mu.Lock()
	r.done = true
	for c := range r.conns {
		_ = c.Close() // dropping the path is the point
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return false
	}
	r.conns[c] = true
	return true
}

func (r *Relay) untrack(cs ...net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		delete(r.conns, c)
		_ = c.Close() // the pair is finished
	}
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if !r.track(c) {
			_ = c.Close() // closing down
			return
		}
		r.wg.Add(1)
		go r.serve(c)
	}
}

func (r *Relay) serve(client net.Conn) {
	defer r.wg.Done()
	server, err := net.DialTimeout("tcp", r.target, 10*time.Second)
	if err != nil || !r.track(server) {
		if server != nil {
			_ = server.Close() // closing down
		}
		r.untrack(client)
		return
	}
	// down is when the server's bytes were last delivered to the client;
	// up when the client's last message was read. A message read after a
	// delivery begins a turn.
	var down atomic.Int64
	var up int64
	ws := &wsCounter{record: func(method string) {
		now := time.Now().UnixNano()
		r.record(method, down.Load() > up)
		up = now
	}}
	var pair sync.WaitGroup
	pair.Add(2)
	go func() { defer pair.Done(); r.pipe(client, server, ws.feed, nil) }()
	go func() {
		defer pair.Done()
		r.pipe(server, client, nil, func() { down.Store(time.Now().UnixNano()) })
	}()
	pair.Wait()
	r.untrack(client, server)
}

type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each chunk at its read time plus the one-way delay,
// in order. seen (may be nil) sees each chunk as it is read, wrote (may be
// nil) each chunk as it is written.
func (r *Relay) pipe(src, dst net.Conn, seen func([]byte), wrote func()) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				at := time.Now()
				if seen != nil {
					seen(buf[:n])
				}
				q <- chunk{b: buf[:n], due: at.Add(time.Duration(r.oneWay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	var werr error
	for c := range q {
		if werr != nil {
			continue // drain, so the reader is not stuck on a full queue
		}
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if wrote != nil {
			wrote() // before the write: the reader may react before Write returns
		}
		_, werr = dst.Write(c.b)
		if werr != nil {
			_ = src.Close() // the other side is gone: stop reading
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok && werr == nil {
		_ = tc.CloseWrite() // pass the EOF on; the other direction may still run
	} else {
		_ = dst.Close() // nothing more can go this way
	}
}

// wsCounter follows a client's side of a WebSocket connection: it skips the
// HTTP upgrade request, then parses frames and reports each message's CDP
// method once its final frame is read.
type wsCounter struct {
	record func(method string)

	upgraded bool
	head     []byte // the upgrade request so far, or a frame header in parts

	// the current frame
	inFrame    bool
	remaining  uint64
	mask       [4]byte
	masked     bool
	maskPos    uint64
	fin        bool
	control    bool
	compressed bool
	prefix     []byte // the message's first bytes, unmasked
}

const prefixLen = 256

func (w *wsCounter) feed(b []byte) {
	if !w.upgraded {
		w.head = append(w.head, b...)
		i := bytes.Index(w.head, []byte("\r\n\r\n"))
		if i < 0 {
			if len(w.head) > 64<<10 {
				w.upgraded = true // not HTTP: count nothing sensible, but stop buffering
				w.head = nil
			}
			return
		}
		b = w.head[i+4:]
		w.head = nil
		w.upgraded = true
	}
	for len(b) > 0 {
		if !w.inFrame {
			w.head = append(w.head, b...)
			b = nil
			n, ok := w.header()
			if !ok {
				return
			}
			b = w.head[n:]
			w.head = nil
			w.inFrame = true
			if w.remaining == 0 {
				w.endFrame()
			}
			continue
		}
		n := uint64(len(b))
		if n > w.remaining {
			n = w.remaining
		}
		if !w.control {
			for _, c := range b[:n] {
				if len(w.prefix) >= prefixLen {
					break
				}
				if w.masked {
					c ^= w.mask[w.maskPos%4]
				}
				w.prefix = append(w.prefix, c)
				w.maskPos++
			}
		}
		w.remaining -= n
		b = b[n:]
		if w.remaining == 0 {
			w.endFrame()
		}
	}
}

// header parses a frame header from w.head; it returns its length, or false
// when more bytes are needed.
func (w *wsCounter) header() (int, bool) {
	h := w.head
	if len(h) < 2 {
		return 0, false
	}
	n := 2
	length := uint64(h[1] & 0x7f)
	switch length {
	case 126:
		if len(h) < 4 {
			return 0, false
		}
		length = uint64(h[2])<<8 | uint64(h[3])
		n = 4
	case 127:
		if len(h) < 10 {
			return 0, false
		}
		length = 0
		for _, c := range h[2:10] {
			length = length<<8 | uint64(c)
		}
		n = 10
	}
	masked := h[1]&0x80 != 0
	if masked {
		if len(h) < n+4 {
			return 0, false
		}
		copy(w.mask[:], h[n:n+4])
		n += 4
	}
	op := h[0] & 0x0f
	w.masked, w.maskPos, w.remaining = masked, 0, length
	w.fin = h[0]&0x80 != 0
	w.control = op >= 8
	if op == 1 || op == 2 { // a message's first frame
		w.prefix = w.prefix[:0]
		w.compressed = h[0]&0x40 != 0
	}
	return n, true
}

func (w *wsCounter) endFrame() {
	w.inFrame = false
	if w.control || !w.fin {
		return
	}
	m := "?"
	if !w.compressed {
		m = methodOf(w.prefix)
	}
	w.record(m)
	w.prefix = w.prefix[:0]
}

// methodOf finds "method":"X" in the start of a JSON message.
func methodOf(b []byte) string {
	i := bytes.Index(b, []byte(`"method":"`))
	if i < 0 {
		return "?"
	}
	rest := b[i+len(`"method":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "?"
	}
	return string(rest[:j])
}
