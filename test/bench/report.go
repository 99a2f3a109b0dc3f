package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

type latencyRow struct {
	name, baseName, note string
	tw, base             sample
}

// legs split one case's latency into consecutive parts, by request traces.
type legs struct {
	name  string
	names []string
	s     map[string]sample
}

func newLegs(name string, names ...string) *legs {
	return &legs{name: name, names: names, s: map[string]sample{}}
}

func (l *legs) add(name string, d time.Duration) { l.s[name] = append(l.s[name], ms(d)) }

type costRow struct {
	name, unit string
	c          costWindow
	per        int
}

type report struct {
	cfg      config
	machine  string
	lat      []latencyRow
	costs    []costRow
	scale    []scaleRow
	notes    []string
	profiles string
	legs     []*legs
	elapsed  time.Duration
	remote   []remoteRow
	remoteNS string
}

func (r *report) latency(name string, tw sample, baseName string, base sample, note string) {
	r.lat = append(r.lat, latencyRow{name: name, baseName: baseName, note: note, tw: tw, base: base})
}

func (r *report) cost(name string, c costWindow, per int, unit string) {
	r.costs = append(r.costs, costRow{name: name, c: c, per: per, unit: unit})
}

func (r *report) note(s string) { r.notes = append(r.notes, s) }

func (r *report) findLat(prefix, base string) *latencyRow {
	for i := range r.lat {
		if strings.HasPrefix(r.lat[i].name, prefix) && strings.HasPrefix(r.lat[i].baseName, base) {
			return &r.lat[i]
		}
	}
	return nil
}

func (r *report) findCost(prefix string) *costRow {
	for i := range r.costs {
		if strings.HasPrefix(r.costs[i].name, prefix) {
			return &r.costs[i]
		}
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// leg returns the samples of one leg (by prefixes of case and leg name).
func (r *report) leg(casePrefix, legPrefix string) sample {
	for _, lg := range r.legs {
		if !strings.HasPrefix(lg.name, casePrefix) {
			continue
		}
		for _, n := range lg.names {
			if strings.HasPrefix(n, legPrefix) {
				return lg.s[n]
			}
		}
	}
	return nil
}

// evalTargets states issue 12's targets against this run's numbers.
func (r *report) evalTargets() []string {
	var out []string
	for _, c := range []string{"spawn adoption: click", "spawn adoption: window.open"} {
		l := r.findLat(c, "trigger")
		own, create := r.leg(c, "targetCreated → agent sends CREATE"), r.leg(c, "CREATE browserwindows")
		if l == nil || len(own) == 0 || len(create) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("| %s: tabwarden's own part (targetCreated → CREATE sent) < 1 ms (p50) | %s | %s |", l.name, fmtMS(own.p50()), verdict(own.p50() < 1)))
		bound := l.base.p50() + create.p50() + 1
		out = append(out, fmt.Sprintf("| %s: = the browser's event + one API create (p50 ≤ raw + CREATE leg + 1 ms) | %s vs %s | %s |", l.name, fmtMS(l.tw.p50()), fmtMS(bound), verdict(l.tw.p50() <= bound)))
	}
	for _, c := range []string{"open: background tab", "open: new window"} {
		l := r.findLat(c, "Target.createTarget")
		rt := r.leg(c, "status PATCH")
		if l == nil || len(rt) == 0 {
			continue
		}
		bound := l.base.p50() + 2*rt.p50()
		out = append(out, fmt.Sprintf("| %s: p50 ≤ raw createTarget + 2 API round trips (2 × the status PATCH's p50) | %s vs %s | %s |", l.name, fmtMS(l.tw.p50()), fmtMS(bound), verdict(l.tw.p50() <= bound)))
	}
	// Issue 23: a Click that spawns nothing completes within the raw click
	// and two API round trips (the action's create and its result; the
	// agent's claim, which makes the action run at most once, is a third).
	if l := r.findLat("action round trip: one Click step", "raw CDP press"); l != nil {
		if rt := r.leg("action round trip: one Click step", "result: status Succeeded"); len(rt) > 0 {
			bound := l.base.p50() + 2*rt.p50()
			out = append(out, fmt.Sprintf("| a Click that spawns nothing: p50 ≤ raw press and release + 2 API round trips (2 × the result PATCH's p50) | %s vs %s | %s |", fmtMS(l.tw.p50()), fmtMS(bound), verdict(l.tw.p50() <= bound)))
		}
	}
	for _, n := range []string{"10", "50"} {
		if l := r.findLat("cleanup: delete session with "+n+" page(s) → last", "raw closeTarget, concurrent"); l != nil {
			out = append(out, fmt.Sprintf("| cleanup of %s pages ≤ 1.3× raw concurrent close (p50) | %s vs %s | %s |", n, fmtMS(l.tw.p50()), fmtMS(1.3*l.base.p50()), verdict(l.tw.p50() <= 1.3*l.base.p50())))
		}
		if l := r.findLat("cleanup: "+n+" page(s), tabwarden vs Playwright", "Playwright"); l != nil {
			out = append(out, fmt.Sprintf("| cleanup of %s pages no slower than Playwright context.close() (p50) | %s vs %s | %s |", n, fmtMS(l.tw.p50()), fmtMS(l.base.p50()), verdict(l.tw.p50() <= l.base.p50())))
		}
	}
	for _, lg := range r.legs {
		if !strings.HasPrefix(lg.name, "cleanup: ") {
			continue
		}
		for _, n := range lg.names {
			if v := lg.s[n]; strings.HasPrefix(n, "last page destroyed → session object gone") && len(v) > 0 {
				out = append(out, fmt.Sprintf("| %s: session object gone ≤ 50 ms after its last page (p50) | %s | %s |", strings.TrimPrefix(lg.name, "cleanup: "), fmtMS(v.p50()), verdict(v.p50() <= 50)))
			}
		}
	}
	for _, c := range []string{"spawn adoption: click", "spawn adoption: window.open"} {
		if k := r.findCost(c); k != nil && k.per > 0 {
			w := float64(k.c.ctl.writes()+k.c.agt.writes()) / float64(k.per)
			out = append(out, fmt.Sprintf("| ≤ 3 API writes per spawn (%s) | %.1f | %s |", strings.TrimPrefix(c, "spawn adoption: "), w, verdict(w <= 3)))
		}
	}
	for _, c := range []string{"open: background tab (until quiet)", "open: new window (until quiet)"} {
		if k := r.findCost(c); k != nil && k.per > 0 {
			w := float64(k.c.ctl.writes()+k.c.agt.writes()) / float64(k.per)
			// The client's own create is not counted here (it is not tabwarden's): ≤ 3 with it.
			out = append(out, fmt.Sprintf("| ≤ 3 API writes per open, the client's create included (%s) | 1 + %.1f | %s |", strings.TrimSuffix(strings.TrimPrefix(c, "open: "), " (until quiet)"), w, verdict(1+w <= 3)))
		}
	}
	if k := r.findCost("cleanup: delete a session with 50"); k != nil && k.per > 0 {
		w := float64(k.c.ctl.writes()+k.c.agt.writes()) / float64(k.per)
		out = append(out, fmt.Sprintf("| ≤ 2 API writes per page cleaned up (session of 50) | %.2f | %s |", w, verdict(w <= 2)))
	}
	if len(r.scale) > 0 {
		big := r.scale[len(r.scale)-1]
		out = append(out, fmt.Sprintf("| scale: %d × %d Ready within 1.3× the API server floor | %.2f× | %s |", big.S, big.W, big.readyRatio(), verdict(big.readyRatio() <= 1.3)))
		rss := max(big.ctl.peakRSS, big.ctlDel.peakRSS)
		out = append(out, fmt.Sprintf("| scale: controller RSS ≤ 300 MiB at S=%d | %.0f MiB | %s |", big.S, rss, verdict(rss <= 300)))
		arss := max(big.agt.peakRSS, big.agtDel.peakRSS)
		out = append(out, fmt.Sprintf("| scale: agent RSS ≤ 300 MiB at S=%d | %.0f MiB | %s |", big.S, arss, verdict(arss <= 300)))
		if len(r.scale) > 1 {
			g := growth(r.scale)
			out = append(out, fmt.Sprintf("| scale: linear growth (Ready time per session at the largest S ÷ at the smallest; ≤ 1.3 counted as linear) | %.2f | %s |", g, verdict(g <= 1.3)))
		}
	}
	return out
}

func (r *report) markdown() string {
	var b strings.Builder
	mode := "full"
	if r.cfg.short {
		mode = "-short"
	}
	fmt.Fprintf(&b, "# tabwarden benchmark, %s (%s run)\n\n", r.cfg.date, mode)
	cmd := "make bench  # go run ./test/bench"
	if r.cfg.short {
		cmd = "make bench-short  # go run ./test/bench -short"
	}
	fmt.Fprintf(&b, "Command: `%s`; this run: `go run ./test/bench %s`. Whole run: %s.\n\n", cmd, strings.Join(os.Args[1:], " "), r.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "## Machine\n\n%s\n", r.machine)

	if len(r.lat) > 0 {
		b.WriteString("\n## Latency (ms): tabwarden against its baseline in the same run\n\n")
		b.WriteString("| case | tabwarden p50 | p90 | p99 | baseline | base p50 | base p90 | base p99 | ratio p50 | ratio p99 | reps |\n")
		b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range r.lat {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d |\n", l.name,
				fmtMS(l.tw.p50()), fmtMS(l.tw.p90()), fmtMS(l.tw.p99()), l.baseName,
				fmtMS(l.base.p50()), fmtMS(l.base.p90()), fmtMS(l.base.p99()),
				ratio(l.tw.p50(), l.base.p50()), ratio(l.tw.p99(), l.base.p99()), len(l.tw), len(l.base))
		}
		var notes []string
		for _, l := range r.lat {
			if l.note != "" {
				notes = append(notes, fmt.Sprintf("- *%s*: %s.", l.name, l.note))
			}
		}
		if len(notes) > 0 {
			b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
		}
	}
	if len(r.legs) > 0 {
		b.WriteString("\n## Where the time goes (ms, from the roles' request traces)\n\n| case | leg | p50 | p90 | p99 | n |\n|---|---|---:|---:|---:|---:|\n")
		for _, lg := range r.legs {
			for _, n := range lg.names {
				s := lg.s[n]
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d |\n", lg.name, n, fmtMS(s.p50()), fmtMS(s.p90()), fmtMS(s.p99()), len(s))
			}
		}
	}
	if len(r.costs) > 0 {
		b.WriteString("\n## API cost per operation (client-side count, in-process roles)\n\n")
		b.WriteString("| operation | unit | samples | controller req | controller writes | agent req | agent writes | **writes total** | writes by verb and resource |\n")
		b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, c := range r.costs {
			if c.per == 0 {
				continue
			}
			p := float64(c.per)
			all := c.c.ctl.plus(c.c.agt)
			fmt.Fprintf(&b, "| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | **%.2f** | ctl: %s; agent: %s |\n", c.name, c.unit, c.per,
				float64(c.c.ctl.total())/p, float64(c.c.ctl.writes())/p, float64(c.c.agt.total())/p, float64(c.c.agt.writes())/p,
				float64(all.writes())/p, c.c.ctl.breakdown(p, true), c.c.agt.breakdown(p, true))
		}
		b.WriteString("\nReads here are almost all served by the informer caches; GET/LIST counted above are direct API reads (e.g. the agent's profile GET through the API reader).\n")
		if r.cfg.costRepsRest == 0 {
			b.WriteString("\nThis run counted the spawn cases only; the opens' and cleanups' API writes are counted in the full run (`make bench`).\n")
		}
	}
	if len(r.remote) > 0 {
		b.WriteString(r.remoteMarkdown())
	}
	if len(r.scale) > 0 {
		b.WriteString(r.scaleMarkdown())
	}
	if t := r.evalTargets(); len(t) > 0 {
		b.WriteString("\n## Targets\n\n| target | measured | status |\n|---|---|---|\n")
		b.WriteString(strings.Join(t, "\n") + "\n")
	}
	if len(r.notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

func describeMachine(ctx context.Context, assets string) string {
	var lines []string
	model := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(strings.SplitN(string(data), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
		}
	}
	lines = append(lines, fmt.Sprintf("- CPU: %d cores (%s), memory %s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH))
	if out, err := exec.CommandContext(ctx, "uname", "-r").Output(); err == nil {
		lines = append(lines, "- kernel: "+strings.TrimSpace(string(out)))
	}
	lines = append(lines, "- Go: "+runtime.Version())
	if v, err := chromium.Version(ctx); err == nil {
		bin, _ := chromium.Find()
		lines = append(lines, fmt.Sprintf("- Chromium: %s (%s, headless)", v, bin))
	}
	if out, err := exec.CommandContext(ctx, filepath.Join(assets, "kube-apiserver"), "--version").Output(); err == nil {
		lines = append(lines, "- kube-apiserver: "+strings.TrimSpace(string(out))+" (envtest, built from source by hack/envtest.sh)")
	}
	if out, err := exec.CommandContext(ctx, filepath.Join(assets, "etcd"), "--version").Output(); err == nil {
		lines = append(lines, "- etcd: "+strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	}
	if out, err := exec.CommandContext(ctx, "node", "--version").Output(); err == nil {
		lines = append(lines, "- Node (Playwright peer): "+strings.TrimSpace(string(out))+", playwright-core from test/bench/node/package-lock.json")
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		lines = append(lines, "- load average at start: "+strings.Join(strings.Fields(string(l))[:3], " ")+" (other work shares this machine; compare ratios within one run)")
	}
	return strings.Join(lines, "\n") + "\n"
}
