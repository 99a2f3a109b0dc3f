// Command bench measures tabwarden against the browser's and the API server's
// own floors on this machine: spawn adoption, open, cleanup, actions, API cost
// per operation, scale, and a remote pool (remote.go: Chromium in a network
// namespace of its own behind a user-space delay relay, at 0, 10 and 50 ms
// RTT; needs root). It starts the embedded control plane (kube-apiserver and
// etcd from hack/envtest.sh), the controller and a CDP agent on headless
// Chromium, serves the fixture site on 127.0.0.1, prints a Markdown table and
// writes it with the machine's description to bench/results/<date>.md.
//
//	go run ./test/bench            # the full run (make bench)
//	go run ./test/bench -short     # a quick look, under two minutes (make bench-short)
//
// TABWARDEN_BENCH_DUMP_WRITES=1 prints every write of the in-process roles, with
// its body, to stderr: where each write per operation comes from.
//
// The scale case runs the controller and the agent (fake driver) as child
// processes of this binary (-role), so that their RSS and CPU are their own.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tabwarden/tabwarden/internal/testenv"
)

type config struct {
	short     bool
	out       string
	trace     string // -trace: the directory of the cleanup timelines
	sections  map[string]bool
	spawnReps int
	openReps  int
	costReps  int // repetitions of each spawn case that also count API requests (between two waits for quiet)
	// costRepsRest is the same for the open and cleanup cases. -short counts
	// only the spawns (each counted repetition waits for quiet about three
	// times, 2–3 s each, which is most of a short run's time).
	costRepsRest int
	warmReps     int // unmeasured repetitions before each spawn and open case
	cleanReps    map[int]int
	cleanNs      []int
	scaleS       []int
	scaleWin     int
	workers      int
	roleQPS      float64
	roleBurst    int
	ctlWorkers   int
	// roleMemMiB runs the scale case's roles as under a container memory limit
	// of this many MiB: GOMEMLIMIT at 90 % of it, as run.SoftMemoryLimit sets
	// in a container (0: none, like the bench's processes, which have no limit).
	roleMemMiB int
	// apiProfile, when set, profiles the API server's CPU for this long from
	// the start of each scale phase, the floor's and tabwarden's, create and
	// delete (-apiserver-profile), into
	// apiserver-{floor,tabwarden}[-delete]-S<S>.cpu.pprof in the run's
	// directory. A delete phase starts only once its create phase's profile is
	// written (its times are unaffected).
	apiProfile time.Duration
	profileDir string
	date       string
	logFile    string
	// remoteReps is the repetitions of each remote case per path setting
	// (cleanup: a quarter of it for 10 pages, a tenth for 50, at least one).
	remoteReps int
	// remotePaths are the remote section's path settings (-remote-paths),
	// remoteNs its cleanup sizes.
	remotePaths string
	remoteNs    []int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-role" {
		os.Exit(roleMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "-netfwd" {
		os.Exit(netfwdMain(os.Args[2:]))
	}
	var (
		short    = flag.Bool("short", false, "a quick look: few repetitions, small N and S (under two minutes)")
		out      = flag.String("out", "", "results file (default bench/results/<date>.md; \"-\" prints only)")
		sections = flag.String("sections", "spawn,open,cleanup,action,remote,extension,scale", "sections to run (remote: Chromium in a network namespace behind a delay relay; needs root; extension: Chromium with the real extension, paired with an in-process host)")
		scale    = flag.String("scale", "", "comma-separated session counts for the scale case (default 500,1000,2000; -short 10,20; e.g. 1000,2000,5000,10000 for the long run)")
		reps     = flag.Int("reps", 0, "repetitions for spawn and open (default 200; -short 20)")
		rreps    = flag.Int("remote-reps", 0, "repetitions of each remote case per path setting (default 20; -short 2)")
		rclean   = flag.String("remote-cleanup", "", "the remote section's cleanup sizes, e.g. 10,50 (default 10,50; -short 10; none: 0)")
		rpaths   = flag.String("remote-paths", "", "the remote section's paths: CDP RTTs in ms, each optionally +API RTT in ms (default 0,10,50,10+10; -short 50)")
		qps      = flag.Float64("role-qps", 2000, "client QPS of the controller and agent in the scale case (run.Common.QPS; 0 = the shipped default 200/400)")
		workers  = flag.Int("ctl-workers", 0, "experiment: run the scale case's controller with this many workers per reconciler (0: as shipped)")
		memLimit = flag.Int("role-memory-limit", 0, "run the scale case's controller and agent as under a container memory limit of this many MiB: GOMEMLIMIT at 90 % of it, the soft limit the roles set in a container (0: none, as the bench's processes have no limit; the limit itself is not enforced)")
		clean    = flag.String("clean-reps", "", "cleanup repetitions per N, e.g. 1:200,10:30,50:10")
		date     = flag.String("date", time.Now().Format("2006-01-02"), "date in the results file name")
		apiProf  = flag.Duration("apiserver-profile", 0, "profile the API server's CPU for this long (whole seconds, at least 1s) from the start of each scale phase (the floor's and tabwarden's, create and delete), e.g. 30s; the files are named in the log")
		trace    = flag.String("trace", "", "write each cleanup repetition's timeline (the roles' API requests, the targets destroyed) to cleanup-<session>.txt in this directory")
		verbose  = flag.Bool("v", false, "log the in-process roles at info level (default: errors only) to bench.log in the run's directory")
	)
	flag.Parse()
	cfg := config{short: *short, out: *out, sections: map[string]bool{}, scaleWin: 5, workers: 8, roleQPS: *qps, date: *date, trace: *trace}
	for _, s := range strings.Split(*sections, ",") {
		cfg.sections[strings.TrimSpace(s)] = true
	}
	cfg.roleBurst = int(2 * cfg.roleQPS)
	cfg.ctlWorkers = *workers
	cfg.roleMemMiB = *memLimit
	cfg.apiProfile = *apiProf
	if cfg.apiProfile != 0 && cfg.apiProfile < time.Second {
		fail(fmt.Errorf("-apiserver-profile %v: the API server profiles whole seconds; give at least 1s, e.g. -apiserver-profile 30s", cfg.apiProfile))
	}
	if cfg.short {
		// Under two minutes on 2 cores: only the spawn cases count API writes
		// (a counted repetition waits for quiet three times, 2–3 s each).
		cfg.spawnReps, cfg.openReps, cfg.costReps, cfg.costRepsRest, cfg.warmReps = 4, 4, 1, 0, 1
		// N=50 opens 50 windows four times (tabwarden, two raw baselines,
		// Playwright): over a minute on 2 cores, so only the full run has it;
		// one repetition per N keeps the pool cases' extra baseline in.
		cfg.cleanNs = []int{1, 10}
		cfg.cleanReps = map[int]int{1: 1, 10: 1}
		cfg.scaleS = []int{10, 20}
		cfg.remoteReps, cfg.remotePaths, cfg.remoteNs = 2, "50", []int{10}
	} else {
		cfg.spawnReps, cfg.openReps, cfg.costReps, cfg.costRepsRest, cfg.warmReps = 200, 200, 10, 10, 3
		cfg.cleanNs = []int{1, 10, 50}
		cfg.cleanReps = map[int]int{1: 200, 10: 30, 50: 10}
		cfg.scaleS = []int{500, 1000, 2000}
		cfg.remoteReps, cfg.remotePaths, cfg.remoteNs = 20, "0,10,50,10+10", []int{10, 50}
	}
	if *rpaths != "" {
		cfg.remotePaths = *rpaths
	}
	if *rclean != "" {
		cfg.remoteNs = nil
		for _, f := range strings.Split(*rclean, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				fail(fmt.Errorf("-remote-cleanup: %w", err))
			}
			if n > 0 {
				cfg.remoteNs = append(cfg.remoteNs, n)
			}
		}
	}
	if *rreps > 0 {
		cfg.remoteReps = *rreps
	}
	if *reps > 0 {
		cfg.spawnReps, cfg.openReps = *reps, *reps
	}
	if *scale != "" {
		cfg.scaleS = nil
		for _, s := range strings.Split(*scale, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				fail(fmt.Errorf("-scale: %w", err))
			}
			cfg.scaleS = append(cfg.scaleS, n)
		}
	}
	if *clean != "" {
		cfg.cleanNs, cfg.cleanReps = nil, map[int]int{}
		for _, kv := range strings.Split(*clean, ",") {
			k, v, _ := strings.Cut(kv, ":")
			n, err1 := strconv.Atoi(k)
			r, err2 := strconv.Atoi(v)
			if err1 != nil || err2 != nil {
				fail(fmt.Errorf("-clean-reps: %q", kv))
			}
			cfg.cleanNs = append(cfg.cleanNs, n)
			cfg.cleanReps[n] = r
		}
	}
	if cfg.out == "" {
		name := cfg.date + ".md"
		if cfg.short {
			name = cfg.date + "-short.md" // a quick look never replaces a full run's results
		}
		cfg.out = filepath.Join(testenv.Root(), "bench", "results", name)
	}
	dir, err := os.MkdirTemp("", "tabwarden-bench-")
	if err != nil {
		fail(err)
	}
	cfg.profileDir = dir
	cfg.logFile = filepath.Join(dir, "bench.log")
	lf, err := os.Create(cfg.logFile)
	if err != nil {
		fail(err)
	}
	level := zapcore.ErrorLevel
	if *verbose {
		level = zapcore.InfoLevel
	}
	logf("role logs: %s", cfg.logFile)
	zl := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(lf), level))
	ctrl.SetLogger(zapr.NewLogger(zl))

	if err := benchMain(context.Background(), cfg); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// benchControlPlane sizes etcd for the scale section: S=10,000 writes a few
// hundred thousand revisions of ~6 KB between the API server's compactions (every
// 5 min), more than etcd's default 2 GiB backend quota, past which every write
// fails ("database space exceeded"). The quota is a limit, not an allocation.
func benchControlPlane(env *envtest.Environment) {
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Configure().Set("quota-backend-bytes", strconv.Itoa(8<<30))
}

func benchMain(ctx context.Context, cfg config) error {
	start := time.Now()
	logf("starting kube-apiserver and etcd")
	env, restCfg, err := testenv.StartWith(benchControlPlane)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	rep := &report{cfg: cfg, machine: describeMachine(ctx, env.BinaryAssetsDirectory)}
	if cfg.sections["spawn"] || cfg.sections["open"] || cfg.sections["cleanup"] || cfg.sections["action"] || cfg.sections["remote"] {
		if err := browserSections(ctx, cfg, restCfg, rep); err != nil {
			return err
		}
	}
	if cfg.sections["extension"] {
		if err := extensionSection(ctx, cfg, rep); err != nil {
			return err
		}
	}
	if cfg.sections["scale"] {
		if err := scaleSection(ctx, cfg, restCfg, rep); err != nil {
			return err
		}
	}
	rep.elapsed = time.Since(start)
	md := rep.markdown()
	fmt.Println(md)
	if cfg.out != "-" {
		if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			return err
		}
		logf("wrote %s (profiles and the log in %s)", cfg.out, cfg.profileDir)
	}
	return nil
}
