package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func (r *report) scaleMarkdown() string {
	var b strings.Builder
	qps := "the shipped default client limit (QPS 200, burst 400)"
	if r.cfg.roleQPS > 0 {
		qps = fmt.Sprintf("client QPS %.0f, burst %d (run.Common; the shipped default is 200/400)", r.cfg.roleQPS, r.cfg.roleBurst)
	}
	if r.cfg.roleMemMiB > 0 {
		qps += fmt.Sprintf("; roles under a soft memory limit GOMEMLIMIT=%d MiB, as in a container limited to %d MiB (-role-memory-limit; the limit itself is not enforced)", r.cfg.roleMemMiB*9/10, r.cfg.roleMemMiB)
	} else {
		qps += "; no memory limit (GOGC=100, as shipped outside a container limit)"
	}
	if r.cfg.ctlWorkers > 0 {
		qps += fmt.Sprintf("; EXPERIMENT: every controller reconciler runs %d workers (shipped: 1)", r.cfg.ctlWorkers)
	}
	fmt.Fprintf(&b, "\n## Scale (fake driver, real API server; controller and agent as child processes, %s)\n\n", qps)
	fmt.Fprintf(&b, "S sessions × %d Open windows created at once by %d client workers; one run per S. The client creates as kubectl tabwarden does: sessions with their cleanup finalizer, windows registered in their create (labels, owner, page finalizer; docs/design.md, Writes per operation). *Ready*: every session has Ready=True with %d live windows and every window shows phase Open. "+
		"*Floor*: the same creates plus one status write per object, same workers, no tabwarden, waited for through the same watch. Times in seconds.\n\n", r.cfg.scaleWin, r.cfg.workers, r.cfg.scaleWin)
	b.WriteString("| S | load avg at start | objects | floor ready | **tabwarden ready** | ratio | per 1k sessions | floor delete | pages closed | objects gone | ratio | ctl RSS peak MiB | agent RSS peak MiB | apiserver RSS MiB | ctl CPU s | agent CPU s | apiserver CPU s | ctl req/s | agent req/s | writes per window (ctl + agent) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.scale {
		objs := s.S * (1 + s.W)
		nw := float64(s.S * s.W)
		fmt.Fprintf(&b, "| %d | %s | %d | %.1f | **%.1f** | %.2f× | %.2f | %.1f | %.1f | %.1f | %.2f× | %.0f | %.0f | %.0f | %.1f + %.1f | %.1f + %.1f | %.1f + %.1f | %.0f | %.0f | create %.2f + %.2f; delete %.2f + %.2f |\n",
			s.S, s.load, objs, s.floorReady.Seconds(), s.ready.Seconds(), s.readyRatio(), s.ready.Seconds()/float64(s.S)*1000,
			s.floorGone.Seconds(), s.pagesClosed.Seconds(), s.gone.Seconds(), s.gone.Seconds()/s.floorGone.Seconds(),
			max(s.ctl.peakRSS, s.ctlDel.peakRSS), max(s.agt.peakRSS, s.agtDel.peakRSS), max(s.apiserver.peakRSS, s.apiDel.peakRSS),
			s.ctl.cpu, s.ctlDel.cpu, s.agt.cpu, s.agtDel.cpu, s.apiserver.cpu, s.apiDel.cpu,
			float64(s.ctlCreate.total())/s.ready.Seconds(), float64(s.agtCreate.total())/s.ready.Seconds(),
			float64(s.ctlCreate.writes())/nw, float64(s.agtCreate.writes())/nw, float64(s.ctlDelete.writes())/nw, float64(s.agtDelete.writes())/nw)
	}
	b.WriteString("\nCPU columns: create phase + delete phase. The floor writes 2 requests per object (create + status).\n")
	if len(r.scale) > 0 {
		s := r.scale[len(r.scale)-1]
		nw := float64(s.S * s.W)
		fmt.Fprintf(&b, "\nLive heap at Ready at S=%d (after a forced GC): controller %.1f MB, agent %.1f MB (%.0f and %.0f bytes per window).\n", s.S,
			float64(s.ctlLive)/1e6, float64(s.agtLive)/1e6, float64(s.ctlLive)/nw, float64(s.agtLive)/nw)
		fmt.Fprintf(&b, "\nRequests per window at S=%d, create phase — controller: %s; agent: %s.\n", s.S, s.ctlCreate.breakdown(nw, false), s.agtCreate.breakdown(nw, false))
		fmt.Fprintf(&b, "Delete phase — controller: %s; agent: %s.\n", s.ctlDelete.breakdown(nw, false), s.agtDelete.breakdown(nw, false))
	}
	if r.profiles != "" {
		b.WriteString("\n### Profiles (largest S)\n\n" + r.profiles)
	}
	return b.String()
}

// summarizeProfiles renders the top of each role's CPU profile at the largest S.
func summarizeProfiles(cfg config, rows []scaleRow) string {
	if len(rows) == 0 {
		return ""
	}
	tag := fmt.Sprintf("S%d", rows[len(rows)-1].S)
	exe, _ := os.Executable()
	var b strings.Builder
	for _, role := range []string{"controller", "agent"} {
		for _, kind := range []string{"cpu", "heap"} {
			p := filepath.Join(cfg.profileDir, role+"-"+tag+"."+kind+".pprof")
			if _, err := os.Stat(p); err != nil {
				continue
			}
			args := []string{"tool", "pprof", "-top", "-nodecount=14"}
			if kind == "heap" {
				args = append(args, "-sample_index=inuse_space")
			} else {
				args = append(args, "-cum")
			}
			out, err := exec.Command("go", append(args, exe, p)...).Output()
			if err != nil {
				continue
			}
			fmt.Fprintf(&b, "%s %s profile (%s):\n\n```\n%s```\n\n", role, kind, p, trimPprof(string(out)))
		}
	}
	return b.String()
}

func trimPprof(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		if l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}
