// Command benchagents runs the same scripted tasks, on the same Chromium and
// on the fixture's agent pages (internal/local/fixture/agents.go), through
// three MCP servers: tabwarden's own (`tabwarden mcp` over stdio, over a real kube-apiserver,
// the controller and a CDP agent attached to Chromium's DevTools port, the
// remote-pool kind), chrome-devtools-mcp (--browserUrl) and Playwright MCP
// (--cdp-endpoint), each on a fresh headless Chromium with the same flags and
// a user's own tab open. Each task is a scripted agent that reads its tool's
// observations and finds elements by role and text in them, as a model
// would; whether a task was done is read from the fixture's server-side
// record. It prints a Markdown table (and writes it to
// bench/results/<date>-agents.md with -write).
//
//	make bench-agents                    # npm ci of the peers (test/benchagents/node), then the run
//	go run ./test/benchagents -write     # the same, writing the results file
//	go run ./test/benchagents -tools tabwarden -tasks a,e -v
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tabwarden/tabwarden/internal/testenv"
)

var verbose bool

func debugf(format string, args ...any) {
	if verbose {
		fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	var (
		write    = flag.Bool("write", false, "also write the table to bench/results/<date>-agents.md")
		date     = flag.String("date", time.Now().Format("2006-01-02"), "date in the results file name")
		tools    = flag.String("tools", "tabwarden,chrome-devtools-mcp,playwright-mcp", "the MCP servers to run")
		taskList = flag.String("tasks", "a,b,c,d,e", "the tasks to run")
		stdio    = flag.Bool("stdio", true, "run tabwarden's MCP server as an agent does: the built `tabwarden mcp` over stdio (false: in process)")
		pool     = flag.Bool("pool", true, "run tabwarden's profile as a pool (each session in a browser context of its own), the remote-pool kind")
	)
	flag.StringVar(&samplesDir, "samples", "", "write every observation's raw result into this directory (the parsers' test samples come from there)")
	flag.BoolVar(&verbose, "v", false, "print every tool call and its result to stderr")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tabwarden-bench-agents-")
	if err != nil {
		fail(err)
	}
	lf, err := os.Create(filepath.Join(dir, "roles.log"))
	if err != nil {
		fail(err)
	}
	ctrl.SetLogger(zapr.NewLogger(zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(lf), zapcore.ErrorLevel))))
	logf("role logs: %s", lf.Name())
	cfg := config{dir: dir, pool: *pool, stdio: *stdio, loadStart: loadavg(), nodeDir: filepath.Join(testenv.Root(), "test", "benchagents", "node")}
	for _, t := range strings.Split(*tools, ",") {
		cfg.tools = append(cfg.tools, strings.TrimSpace(t))
	}
	for _, id := range strings.Split(*taskList, ",") {
		for _, t := range tasks {
			if t.id == strings.TrimSpace(id) {
				cfg.tasks = append(cfg.tasks, t)
			}
		}
	}
	start := time.Now()
	rows, err := runAll(context.Background(), cfg)
	if err != nil {
		fail(err)
	}
	md := markdown(cfg, rows, time.Since(start))
	fmt.Println(md)
	if *write {
		out := filepath.Join(testenv.Root(), "bench", "results", *date+"-agents.md")
		if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
			fail(err)
		}
		logf("wrote %s", out)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-agents:", err)
	os.Exit(1)
}
