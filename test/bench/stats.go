package main

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// sample is a set of measurements in milliseconds.
type sample []float64

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// q returns the p-quantile (0..1) by linear interpolation between closest ranks.
func (s sample) q(p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := slices.Clone(s)
	slices.Sort(c)
	pos := p * float64(len(c)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return c[lo] + (c[hi]-c[lo])*(pos-float64(lo))
}

func (s sample) p50() float64 { return s.q(0.50) }
func (s sample) p90() float64 { return s.q(0.90) }
func (s sample) p99() float64 { return s.q(0.99) }

func fmtMS(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 10000:
		return fmt.Sprintf("%.0f", v)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// hub delivers events to waiters registered before the event happens.
type hub[E any] struct {
	mu   sync.Mutex
	subs []*sub[E]
}

type sub[E any] struct {
	h    *hub[E]
	pred func(E) bool
	ch   chan E
}

// expect registers a waiter; pred runs under the hub's lock and may keep state
// (return true on the event that completes the wait).
func (h *hub[E]) expect(pred func(E) bool) *sub[E] {
	s := &sub[E]{h: h, pred: pred, ch: make(chan E, 1)}
	h.mu.Lock()
	h.subs = append(h.subs, s)
	h.mu.Unlock()
	return s
}

func (h *hub[E]) publish(e E) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.subs[:0]
	for _, s := range h.subs {
		if s.pred(e) {
			s.ch <- e
			continue
		}
		kept = append(kept, s)
	}
	for i := len(kept); i < len(h.subs); i++ {
		h.subs[i] = nil
	}
	h.subs = kept
}

func (s *sub[E]) cancel() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.h.subs = slices.DeleteFunc(s.h.subs, func(x *sub[E]) bool { return x == s })
}

func (s *sub[E]) wait(timeout time.Duration) (E, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case e := <-s.ch:
		return e, nil
	case <-t.C:
		s.cancel()
		var zero E
		return zero, fmt.Errorf("timed out after %v", timeout)
	}
}

func strconvF(v float64) string { return fmt.Sprintf("%.2f", v) }
