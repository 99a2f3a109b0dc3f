package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
)

// loadavg is the 1-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

func nodeVersion() string {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// markdown is the results table, a summary per tool and what each column means.
func markdown(cfg config, rows []row, elapsed time.Duration) string {
	var b strings.Builder
	ver, err := chromium.Version(context.Background())
	if err != nil {
		ver = "Chromium (version unknown: " + err.Error() + ")"
	}
	fmt.Fprintf(&b, "# Agents benchmark: tabwarden, chrome-devtools-mcp and Playwright MCP on the same tasks\n\n")
	fmt.Fprintf(&b, "`make bench-agents` (test/benchagents), %s, %d CPUs, %s/%s, %s; total %s.\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Load average at the start %s, at the end %s (the machine is shared). ", cfg.loadStart, loadavg())
	fmt.Fprintf(&b, "Each tool on a fresh headless %s (same flags, fresh profile) whose first tab is the user's; Node %s for the peers; tabwarden's profile pool=%v (each session in a browser context of its own), its MCP server %s.\n\n", ver, nodeVersion(), cfg.pool, transport(cfg))
	names := map[string]string{}
	for _, t := range tasks {
		names[t.id] = t.name
	}
	b.WriteString("| task | tool | completed | tool calls | bytes per observation, mean (text blocks) | p50 per call | pages left open | user's tab |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		done := "yes"
		if !r.done {
			done = "no"
			if r.reason != "" {
				done += ": " + escape(r.reason)
			}
		}
		left := fmt.Sprint(r.pagesLeft)
		if r.pagesLeft > 0 {
			left += " (" + escape(strings.Join(shortURLs(r.leftURLs), ", ")) + ")"
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %d | %d (%d) | %d ms | %s | %s |\n", r.task, names[r.task], r.tool, done,
			r.stats.calls, r.stats.meanObsBytes, r.stats.meanObsText, r.stats.p50.Milliseconds(), left, escape(r.userTab))
	}
	b.WriteString("\n## Per tool\n\n| tool | tasks completed | tool calls | pages left open | tasks where the user's tab was touched |\n|---|---:|---:|---:|---:|\n")
	var order []string
	sum := map[string]*[4]int{}
	for _, r := range rows {
		s := sum[r.tool]
		if s == nil {
			s = &[4]int{}
			sum[r.tool] = s
			order = append(order, r.tool)
		}
		if r.done {
			s[0]++
		}
		s[1] += r.stats.calls
		s[2] += r.pagesLeft
		if r.userTab != "untouched" {
			s[3]++
		}
	}
	for _, t := range order {
		s := sum[t]
		n := 0
		for _, r := range rows {
			if r.tool == t {
				n++
			}
		}
		fmt.Fprintf(&b, "| %s | %d / %d | %d | %d | %d |\n", t, s[0], n, s[1], s[2], s[3])
	}
	var notes []string
	for _, r := range rows {
		if r.finishErr != "" {
			notes = append(notes, fmt.Sprintf("- %s, task %s: ending the task failed: %s", r.tool, r.task, r.finishErr))
		}
		if !r.done && r.reason == "" {
			notes = append(notes, fmt.Sprintf("- %s, task %s: the script ran through but the fixture recorded no success (%s)", r.tool, r.task, r.detail))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n## Notes from this run\n\n" + strings.Join(notes, "\n") + "\n")
	}
	b.WriteString(`
## How to read it

- **completed**: from the fixture's server-side record (a reply sent with the agent's text, a login
  accepted on the iframe's own site, the option picked, the dialog dismissed, all three compose
  popups loaded), never from the tool's word; "no" carries the scripted agent's reason.
- **tool calls**: every MCP tool call of the task, ending it included (tabwarden: start_session,
  open_window, observe, act, list_owned, acknowledge, finish; a refusal and the call its hint names
  count too).
- **bytes per observation**: the mean size of the tool result (as JSON) of the tool's snapshot call
  (tabwarden observe, chrome-devtools-mcp take_snapshot, Playwright browser_snapshot), what enters
  the model's context; in parentheses its text content blocks alone (tabwarden also returns the
  observation as structured content, the peers return text only).
- **p50 per call**: the median latency of the task's tool calls, client-side.
- **pages left open**: page targets in Chromium's own /json/list after the task ended that were
  not there before it began (the user's tab and earlier tasks' leftovers excluded).
- **user's tab**: the tab open before any tool attached; its page records focus, blur and
  visibilitychange events, read through raw CDP after each task; "untouched" when it is still
  open at its url with no event.

How each scripted agent ends a task: tabwarden calls finish (the session's temporary and spawned
pages close); the peers have no session, so the agent closes the page it opened itself
(chrome-devtools-mcp close_page, Playwright browser_tabs close), as their docs suggest; pages a
page spawned are not pages the agent opened. Each agent opens its task's page in a new tab
(new_page, browser_tabs new) rather than navigating whatever tab is current. When an element it
expects is missing, an agent observes again, at most three times; chrome-devtools-mcp's last look
is take_snapshot with verbose: true (its default snapshot lists the shadow-root listbox of task c
without its options), counted like any call.
`)
	return b.String()
}

func escape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func shortURLs(us []string) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		if i := strings.Index(u, "/agents/"); i >= 0 {
			u = u[i:]
		}
		out = append(out, u)
	}
	return out
}

func transport(cfg config) string {
	if cfg.stdio {
		return "`tabwarden mcp` over stdio like the peers"
	}
	return "in process"
}
