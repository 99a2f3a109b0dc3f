package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procUsage is one process's resource use over a phase.
type procUsage struct {
	peakRSS float64 // MiB
	cpu     float64 // seconds, in the phase
}

// loadAvg1 is the 1-minute load average, "?" when unknown.
func loadAvg1() string {
	l, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(l)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

func procStat(pid int) (rssMiB float64, cpuSec float64, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// fields after comm: state(0) ... utime(11) stime(12) ... rss(21) in pages
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	rss, _ := strconv.ParseFloat(f[21], 64)
	return rss * float64(os.Getpagesize()) / (1 << 20), (ut + st) / 100, true
}

// childPIDs finds processes whose parent is this one, by command name.
func childPIDs() map[string]int {
	out := map[string]int{}
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(data)
		comm := s[strings.IndexByte(s, '(')+1 : strings.LastIndexByte(s, ')')]
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			out[comm] = pid
		}
	}
	return out
}

// sampler tracks peak RSS and CPU of processes over a phase.
type sampler struct {
	mu    sync.Mutex
	pids  map[string]int
	start map[string]float64
	peak  map[string]float64
	stop  chan struct{}
	done  chan struct{}
}

func startSampler(pids map[string]int) *sampler {
	s := &sampler{pids: pids, start: map[string]float64{}, peak: map[string]float64{}, stop: make(chan struct{}), done: make(chan struct{})}
	for k, pid := range pids {
		rss, cpu, _ := procStat(pid)
		s.start[k], s.peak[k] = cpu, rss
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.mu.Lock()
				for k, pid := range s.pids {
					if rss, _, ok := procStat(pid); ok && rss > s.peak[k] {
						s.peak[k] = rss
					}
				}
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *sampler) finish() map[string]procUsage {
	close(s.stop)
	<-s.done
	out := map[string]procUsage{}
	for k, pid := range s.pids {
		rss, cpu, ok := procStat(pid)
		if ok && rss > s.peak[k] {
			s.peak[k] = rss
		}
		out[k] = procUsage{peakRSS: s.peak[k], cpu: cpu - s.start[k]}
	}
	return out
}
