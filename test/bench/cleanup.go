package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// --- 3. cleanup ---

func cleanupSection(ctx context.Context, l *lab, rep *report) error {
	url := l.site.Path("/landing")
	// The Playwright peer first, every size in one browser of its own (one
	// launch, not one per size), while tabwarden's browser is idle.
	warm := 1
	if l.cfg.short {
		warm = 0
	}
	pws, pwErr := playwrightClose(ctx, url, l.cfg.cleanNs, l.cfg.cleanReps, warm)
	for _, n := range l.cfg.cleanNs {
		reps := l.cfg.cleanReps[n]
		baselines := "raw sequential, raw concurrent, Playwright"
		if l.cfg.short {
			baselines = "raw concurrent, Playwright"
		}
		logf("cleanup of %d page(s): %d repetitions (tabwarden, %s)", n, reps, baselines)
		var last, gone, seq, conc sample
		lg := newLegs(fmt.Sprintf("cleanup: session with %d page(s)", n), "Delete → controller's first window DELETE", "first → last window DELETE (controller loop)",
			"last window DELETE → last page destroyed (agent closes)", "last page destroyed → session object gone")
		var cost costWindow
		costN := 0
		for r := 0; r < reps; r++ {
			name := fmt.Sprintf("clean-%d-%d", n, r)
			if err := l.k8s.Create(ctx, newSession(name, twv1.PlacementWindow)); err != nil {
				return err
			}
			trace := l.traceCleanup()
			defer trace.stop() // on an early return; write stops it first
			ids, err := l.openPages(ctx, name, n, url)
			if err != nil {
				return err
			}
			costRep := costN < l.cfg.costRepsRest
			var before costWindow
			if costRep {
				l.quiet(quietFor, 15*time.Second)
				before = l.mark()
			} else {
				// Let the pages load (and their status settle) as in the cost reps.
				time.Sleep(300 * time.Millisecond)
			}
			destroyed := l.raw.expectDestroyed(ids...)
			sessGone := l.api.expect(func(e apiEvent) bool { return e.Sess != nil && e.Type == watch.Deleted && e.Sess.Name == name })
			var dels []reqEvent
			var dmu sync.Mutex
			rec := l.reqs.expect(func(r reqEvent) bool {
				if r.role == "controller" && r.key == "DELETE browserwindows" {
					dmu.Lock()
					dels = append(dels, r)
					dmu.Unlock()
				}
				return false
			})
			t0 := time.Now()
			trace.begin(t0, ids)
			if err := l.k8s.Delete(ctx, newSession(name, "")); err != nil {
				return err
			}
			de, err := destroyed.wait(120 * time.Second)
			if err != nil {
				return fmt.Errorf("pages of %s never all closed: %w", name, err)
			}
			ge, err := sessGone.wait(120 * time.Second)
			if err != nil {
				return fmt.Errorf("session %s never went: %w", name, err)
			}
			last = append(last, ms(de.At.Sub(t0)))
			gone = append(gone, ms(ge.At.Sub(t0)))
			if err := trace.write(l.cfg.trace, name, de.At, ge.At); err != nil {
				return err
			}
			rec.cancel()
			dmu.Lock()
			if len(dels) > 0 {
				first, lastDel := dels[0].start, dels[0].start
				for _, d := range dels {
					if d.start.Before(first) {
						first = d.start
					}
					if d.start.After(lastDel) {
						lastDel = d.start
					}
				}
				lg.add(lg.names[0], first.Sub(t0))
				lg.add(lg.names[1], lastDel.Sub(first))
				lg.add(lg.names[2], de.At.Sub(lastDel))
				lg.add(lg.names[3], ge.At.Sub(de.At))
			}
			dmu.Unlock()
			if costRep {
				l.quiet(quietFor, 15*time.Second)
				cost = cost.add(l.mark().since(before))
				costN++
			}
			// Raw baselines on the same browser: N new windows, closed one by one
			// (not in -short: no target compares with it, and opening N windows
			// costs Chromium about a quarter of a second each), then all at once.
			for _, concurrent := range []bool{false, true} {
				if !concurrent && l.cfg.short {
					continue
				}
				rids, err := l.rawOpen(ctx, url, n)
				if err != nil {
					return err
				}
				d, err := l.rawClose(ctx, rids, concurrent)
				if err != nil {
					return err
				}
				if concurrent {
					conc = append(conc, d)
				} else {
					seq = append(seq, d)
				}
			}
		}
		rep.latency(fmt.Sprintf("cleanup: delete session with %d page(s) → last page gone", n), last, "raw closeTarget, concurrent", conc,
			"from Delete to the last Target.targetDestroyed on the raw connection")
		if len(seq) > 0 {
			rep.latency(fmt.Sprintf("cleanup: … with %d page(s), vs raw sequential close", n), last, "raw closeTarget, sequential", seq, "")
		}
		rep.latency(fmt.Sprintf("cleanup: delete session with %d page(s) → session object gone", n), gone, "raw closeTarget, concurrent", conc, "")
		rep.legs = append(rep.legs, lg)
		pw := pws[n]
		if pwErr != nil {
			rep.note(fmt.Sprintf("Playwright peer for N=%d failed: %v", n, pwErr))
		} else {
			rep.latency(fmt.Sprintf("cleanup: %d page(s), tabwarden vs Playwright context.close()", n), last, "Playwright context.close()", pw, "separate Chromium launched by playwright-core, same binary and flags")
		}
		rep.cost(fmt.Sprintf("cleanup: delete a session with %d page(s)", n), cost, costN*n, "per page")
		if l.pool != nil {
			if err := cleanupPool(ctx, l, l.pool, rep, n, reps, pw); err != nil {
				return fmt.Errorf("pool: %w", err)
			}
		}
	}
	return nil
}

// rawOpen opens n new windows on the raw connection and waits for their pages to load.
func (l *lab) rawOpen(ctx context.Context, url string, n int) ([]string, error) {
	return openOn(ctx, l.raw, url, n, "")
}

// openOn opens n new windows on raw (in browser context bc, or the default
// one when "") and waits for their pages to load.
func openOn(ctx context.Context, raw *rawCDP, url string, n int, bc string) ([]string, error) {
	ids := make([]string, 0, n)
	loaded := map[string]bool{}
	var mu sync.Mutex
	s := raw.events.expect(func(e cdpEvent) bool {
		if e.Method != "Target.targetInfoChanged" || e.URL != url {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		loaded[e.TargetID] = true
		return len(loaded) >= n
	})
	for i := 0; i < n; i++ {
		r, err := wire.Call(ctx, raw.c, "", wire.CreateTarget{URL: url, Background: true, NewWindow: true, BrowserContextID: bc})
		id := r.TargetID
		if err != nil {
			s.cancel()
			return nil, err
		}
		ids = append(ids, id)
	}
	if _, err := s.wait(60 * time.Second); err != nil {
		return nil, fmt.Errorf("raw pages never loaded: %w", err)
	}
	time.Sleep(300 * time.Millisecond)
	return ids, nil
}

// rawClose closes the pages, one after the other or all at once, and returns
// the time until the last targetDestroyed.
func (l *lab) rawClose(ctx context.Context, ids []string, concurrent bool) (float64, error) {
	t0 := time.Now()
	if !concurrent {
		for _, id := range ids {
			if err := l.raw.closeAndWait(ctx, id); err != nil {
				return 0, err
			}
		}
		return ms(time.Since(t0)), nil
	}
	return closeAllOn(ctx, l.raw, ids)
}

// closeAllOn closes the pages on raw all at once and returns the time until
// the last targetDestroyed.
func closeAllOn(ctx context.Context, raw *rawCDP, ids []string) (float64, error) {
	t0 := time.Now()
	s := raw.expectDestroyed(ids...)
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := raw.closeTarget(ctx, id); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		s.cancel()
		return 0, err
	}
	e, err := s.wait(60 * time.Second)
	if err != nil {
		return 0, err
	}
	return ms(e.At.Sub(t0)), nil
}

// playwrightClose runs test/bench/node/close.mjs: playwright-core launches the
// same Chromium binary headless and, for each n of ns, opens n pages in one
// context and times context.close(), reps[n] times, all in one browser.
func playwrightClose(ctx context.Context, url string, ns []int, reps map[int]int, warm int) (map[int]sample, error) {
	dir := filepath.Join(testenv.Root(), "test", "bench", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		logf("installing playwright-core (npm ci) in %s", dir)
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("npm ci: %v: %s", err, out)
		}
	}
	bin, err := chromium.Find()
	if err != nil {
		return nil, err
	}
	sizes := make([]string, 0, len(ns))
	for _, n := range ns {
		sizes = append(sizes, fmt.Sprintf("%d:%d", n, reps[n]))
	}
	logf("Playwright peer: context.close() of %s page(s) (n:repetitions)", strings.Join(sizes, ", "))
	args := append([]string{"close.mjs", bin, url, strings.Join(sizes, ","), strconv.Itoa(warm)}, chromium.DefaultArgs(false)...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("node close.mjs: %v: %s", err, stderr.String())
	}
	var r struct {
		Closes map[string][]float64 `json:"closes"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("node close.mjs output %q: %w", out, err)
	}
	got := make(map[int]sample, len(ns))
	for _, n := range ns {
		c, ok := r.Closes[strconv.Itoa(n)]
		if !ok || len(c) != reps[n] {
			return nil, fmt.Errorf("node close.mjs output %q: want %d closes of %d page(s)", out, reps[n], n)
		}
		got[n] = c
	}
	return got, nil
}

var _ = client.ObjectKey{}
