package fuzz

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// episode runs one sequence in a fresh world and returns the first invariant it
// breaks, and the trace of what ran.
func episode(name string, ops []op) (trace []string, err error) {
	ctx := context.Background()
	w, err := newWorld(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("setting up: %w", err)
	}
	defer w.close()
	for i, o := range ops {
		n := len(w.trace)
		err := w.apply(o)
		if len(w.trace) > n && !strings.Contains(w.trace[len(w.trace)-1], ": ") {
			stats["noop"]++
		}
		if len(w.trace) > n {
			stats[kindNames[o.K]]++
		}
		if err != nil {
			return w.trace, fmt.Errorf("op %d %s: %w", i, o, err)
		}
	}
	if err := w.end(); err != nil {
		return w.trace, fmt.Errorf("at the end: %w", err)
	}
	return w.trace, nil
}

// TestModelFuzz runs -ops operations in episodes of -episode-ops from -seed.
func TestModelFuzz(t *testing.T) {
	per := *flagEpisode
	episodes := (*flagOps + per - 1) / per
	budget := *flagMinimize
	if budget == 0 {
		budget = 3 * time.Minute
	}
	if *flagReplay != "" {
		ops, err := parseOps(*flagReplay)
		if err != nil {
			t.Fatal(err)
		}
		trace, err := episode("replay", ops)
		t.Logf("trace:\n  %s", strings.Join(trace, "\n  "))
		if err != nil {
			t.Fatalf("the sequence fails: %v", err)
		}
		return
	}
	if *flagOnly >= 0 {
		episodes = max(episodes, *flagOnly+1)
	}
	if *flagShards < 1 || *flagShard < 0 || *flagShard >= *flagShards {
		t.Fatalf("-shard %d -shards %d: want 0 ≤ shard < shards, e.g. -shards 4 -shard 0", *flagShard, *flagShards)
	}
	start := time.Now()
	ran, done := 0, 0
	for e := range episodes {
		if *flagOnly >= 0 && e != *flagOnly {
			continue
		}
		// A shard runs every shards-th episode; an episode's seed and ops do
		// not depend on the shard, so its replay command is the same.
		if *flagOnly < 0 && e%*flagShards != *flagShard {
			continue
		}
		seed := *flagSeed + int64(e)
		ops := generate(seed, per)
		trace, err := episode(fmt.Sprintf("%d-%d", seed, e), ops)
		ran += len(ops)
		done++
		if err == nil {
			if done%10 == 0 {
				t.Logf("%d operations in %d episodes, %v, %.1f ops/s", ran, done, time.Since(start).Round(time.Second), float64(ran)/time.Since(start).Seconds())
			}
			continue
		}
		t.Errorf("episode %d (seed %d) fails: %v\ntrace:\n  %s", e, seed, err, strings.Join(trace, "\n  "))
		min := minimize(t, fmt.Sprintf("%d-%d", seed, e), ops, budget)
		t.Errorf("minimized to %d operations; replay the episode: go test ./test/fuzz -run TestModelFuzz -args -seed %d -episode %d -episode-ops %d\nor the minimized sequence: go test ./test/fuzz -run TestModelFuzz -args -replay '%v'",
			len(min), *flagSeed, e, per, min)
		return
	}
	t.Logf("%d operations in all (%d episodes), %v, %.1f ops/s; done: %v", ran, done, time.Since(start).Round(time.Second), float64(ran)/time.Since(start).Seconds(), stats)
}

// minimize is delta debugging (ddmin) over a failing sequence, within budget.
func minimize(t *testing.T, name string, ops []op, budget time.Duration) []op {
	deadline := time.Now().Add(budget)
	// Replays that fail wait out the whole quiescence bound: a shorter one keeps
	// minimization fast (a replay counts only when it fails within it).
	defer func(d time.Duration) { quiesceTimeout = d }(quiesceTimeout)
	quiesceTimeout = 30 * time.Second
	tries := 0
	fails := func(c []op) bool {
		tries++
		_, err := episode(fmt.Sprintf("%s-min%d", name, tries), c)
		return err != nil
	}
	if !fails(ops) {
		t.Logf("the episode did not fail again on replay: a timing race; the sequence is printed as it ran")
		return ops
	}
	n := 2
	for len(ops) >= 2 && time.Now().Before(deadline) {
		chunk := (len(ops) + n - 1) / n
		reduced := false
		for i := 0; i < len(ops) && time.Now().Before(deadline); i += chunk {
			// The complement of chunk i.
			c := append(append([]op(nil), ops[:i]...), ops[min(i+chunk, len(ops)):]...)
			if len(c) > 0 && fails(c) {
				ops, n, reduced = c, max(n-1, 2), true
				break
			}
		}
		if !reduced {
			if n >= len(ops) {
				break
			}
			n = min(2*n, len(ops))
		}
	}
	t.Logf("minimization: %d replays", tries)
	return ops
}

// parseOps reads a sequence as op.String prints it: "[session(1,2) open(3,4)]".
func parseOps(s string) ([]op, error) {
	var ops []op
	for _, f := range strings.Fields(strings.Trim(s, "[] ")) {
		name, args, ok := strings.Cut(strings.TrimSuffix(f, ")"), "(")
		k := slices.Index(kindNames[:], name)
		var o op
		if _, err := fmt.Sscanf(args, "%d,%d", &o.A, &o.B); !ok || k < 0 || err != nil {
			return nil, fmt.Errorf("operation %q: want kind(A,B) with kind one of %v", f, kindNames)
		}
		o.K = kind(k)
		ops = append(ops, o)
	}
	return ops, nil
}
