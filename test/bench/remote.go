package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
	"github.com/tabwarden/tabwarden/test/bench/netpath"
)

// --- 5. remote pool ---
//
// A Chromium in a network namespace of its own, reached from the host's
// namespace over a veth pair, with a round-trip time added on the way: the
// kernel here has no netem, so the delay is a user-space relay
// (test/bench/netpath) in the bench process that holds each direction's bytes
// for RTT/2, in order, without throttling. Chromium ignores
// --remote-debugging-address in this build (it binds 127.0.0.1 only), so a
// plain relay inside the namespace (a child of this binary, -netfwd) listens
// on the namespace's veth address and forwards to it. The path of every CDP
// connection is then: client → 127.0.0.1 (delay relay) → veth → forwarder →
// Chromium. The agent and the raw baseline each have a relay of their own
// with the same delay, so that the relay counts each one's CDP commands.
//
// The agent's API connection can get a delay relay too (on loopback: the API
// server is in the host's namespace); the bench's own client and the
// controller stay direct.

const (
	remoteProfile = "bench-remote"
	chromeDevPort = "9222" // inside the namespace: nothing else listens there
	fwdPort       = "9223"
)

type remoteLab struct {
	ns       *netpath.Netns
	agtRelay *netpath.Relay // the agent's CDP path
	rawRelay *netpath.Relay // the raw baseline's CDP path
	apiRelay *netpath.Relay // the agent's API path
	raw      *rawCDP
	site     *httptest.Server
	// loadBase is the chain page's load times before the agent connected
	// (remotePageLoad's baseline): no request of it paused.
	loadBase  sample
	stopOnce  sync.Once
	stopFuncs []func()
}

func (r *remoteLab) stop() {
	r.stopOnce.Do(func() {
		for i := len(r.stopFuncs) - 1; i >= 0; i-- {
			r.stopFuncs[i]()
		}
	})
}

func (r *remoteLab) onStop(f func()) { r.stopFuncs = append(r.stopFuncs, f) }

// setRTT sets the delay of the agent's and the raw client's CDP paths, and
// of the agent's API path.
func (r *remoteLab) setRTT(cdpRTT, apiRTT time.Duration) {
	r.agtRelay.SetRTT(cdpRTT)
	r.rawRelay.SetRTT(cdpRTT)
	r.apiRelay.SetRTT(apiRTT)
}

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://[^\s]+)`)

// startRemote makes the namespace, launches Chromium and the forwarder in it,
// the relays, the fixture site on the host's veth address, and an agent for
// the profile bench-remote whose CDP and API connections go through the
// relays. Everything it made is undone by stop, on any failure, and on
// SIGINT or SIGTERM.
func (l *lab) startRemote(ctx context.Context, restCfg *rest.Config) (_ *remoteLab, err error) {
	r := &remoteLab{}
	ns, err := netpath.NewNetns(ctx)
	if err != nil {
		return nil, fmt.Errorf("the remote section puts Chromium in a network namespace of its own and cannot here: %w", err)
	}
	r.ns = ns
	r.onStop(func() {
		if err := ns.Close(); err != nil {
			logf("remote: removing namespace %s: %v", ns.Name, err)
		}
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	sigDone := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			logf("remote: %v: removing namespace %s", s, ns.Name)
			_ = ns.Close() // the process exits either way
			os.Exit(130)
		case <-sigDone:
		}
	}()
	r.onStop(func() { signal.Stop(sig); close(sigDone) })
	defer func() {
		if err != nil {
			r.stop()
		}
	}()
	logf("remote: namespace %s, veth %s (%s) ↔ %s (%s)", ns.Name, ns.HostIf, ns.HostIP, ns.NSIf, ns.NSIP)

	// The fixture site on the host's end of the veth: the pages load over it.
	ln, err := net.Listen("tcp", net.JoinHostPort(ns.HostIP, "0"))
	if err != nil {
		return nil, err
	}
	r.site = httptest.NewUnstartedServer(fixture.Handler())
	_ = r.site.Listener.Close() // replaced by ln
	r.site.Listener = ln
	r.site.Start()
	r.onStop(r.site.Close)

	wsPath, err := launchInNetns(ctx, ns)
	if err != nil {
		return nil, err
	}
	if err := startForwarder(ctx, ns); err != nil {
		return nil, err
	}
	target := net.JoinHostPort(ns.NSIP, fwdPort)
	for _, p := range []**netpath.Relay{&r.agtRelay, &r.rawRelay} {
		if *p, err = netpath.Listen("127.0.0.1:0", target); err != nil {
			return nil, err
		}
		rl := *p
		r.onStop(rl.Close)
	}
	apiHost, err := hostPort(restCfg.Host)
	if err != nil {
		return nil, err
	}
	if r.apiRelay, err = netpath.Listen("127.0.0.1:0", apiHost); err != nil {
		return nil, err
	}
	r.onStop(r.apiRelay.Close)

	if r.raw, err = dialCDP(ctx, "ws://"+r.rawRelay.Addr()+wsPath); err != nil {
		return nil, fmt.Errorf("raw CDP through the relay: %w", err)
	}
	r.onStop(r.raw.close)

	// The baseline of remotePageLoad: the same page in the same browser before
	// any agent guards it. The page's own timing does not cross the CDP path.
	for i := 0; i < max(l.cfg.remoteReps, 5); i++ {
		d, err := r.raw.pageLoad(ctx, r.site.URL+chainPath(i))
		if err != nil {
			return nil, fmt.Errorf("the chain page before the agent connected: %w", err)
		}
		r.loadBase = append(r.loadBase, ms(d))
	}
	if err := testenv.EnsureProfile(ctx, l.k8s, remoteProfile, twv1.DriverCDP); err != nil {
		return nil, err
	}
	// The pages must not reach the real DevTools port nor the forwarder.
	drv, err := cdp.New(ctx, "ws://"+r.agtRelay.Addr()+wsPath, cdp.Options{BlockPorts: []int{9222, 9223}})
	if err != nil {
		return nil, fmt.Errorf("agent's driver through the relay: %w", err)
	}
	r.onStop(drv.Shutdown)
	agtCfg, err := testenv.AgentConfig(restCfg, remoteProfile)
	if err != nil {
		return nil, err
	}
	agtCfg = rest.CopyConfig(agtCfg)
	agtCfg.Host = "https://" + r.apiRelay.Addr() // the serving certificate names 127.0.0.1
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := run.Agent(rctx, agtCfg, run.AgentOptions{Common: run.Common{SkipNameValidation: true}, Options: agent.Options{
			Profile: remoteProfile, Driver: twv1.DriverCDP, Browser: drv, Identity: "bench-remote-agent", Heartbeat: time.Hour,
		}}); err != nil {
			logf("remote agent stopped: %v", err)
		}
	}()
	r.onStop(func() { cancel(); wg.Wait() })
	if err := poll(60*time.Second, func() (bool, error) {
		got := &twv1.BrowserProfile{}
		if err := l.k8s.Get(ctx, client.ObjectKey{Name: remoteProfile}, got); err != nil {
			return false, nil
		}
		return apimeta.IsStatusConditionTrue(got.Status.Conditions, twv1.ConnectedCondition), nil
	}); err != nil {
		return nil, fmt.Errorf("remote agent never connected its profile: %w", err)
	}
	return r, nil
}

// hostPort is the host:port of a rest.Config's Host (a URL or host:port).
func hostPort(h string) (string, error) {
	if !strings.Contains(h, "://") {
		return h, nil
	}
	u, err := url.Parse(h)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// launchInNetns starts headless Chromium in the namespace with its DevTools
// port on the namespace's loopback, and returns the browser's websocket path.
func launchInNetns(ctx context.Context, ns *netpath.Netns) (string, error) {
	bin, err := chromium.Find()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "tabwarden-remote-chromium-")
	if err != nil {
		return "", err
	}
	args := slices.DeleteFunc(chromium.DefaultArgs(false), func(a string) bool { return strings.HasPrefix(a, "--remote-debugging-port") })
	args = append(args, "--remote-debugging-port="+chromeDevPort, "--user-data-dir="+dir, "about:blank")
	cmd := ns.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("chromium in namespace %s: %w", ns.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // killed by the namespace's Close
		close(exited)
		_ = os.RemoveAll(dir) // its profile, once it has exited
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := devtoolsLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // never let Chromium block on its stderr
	}()
	select {
	case u := <-found:
		i := strings.Index(u, "/devtools/")
		if i < 0 {
			return "", fmt.Errorf("chromium's DevTools URL %q has no /devtools/ path", u)
		}
		return u[i:], nil
	case <-exited:
		return "", fmt.Errorf("chromium in namespace %s exited before DevTools was ready", ns.Name)
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("chromium in namespace %s: no DevTools endpoint after 30 s", ns.Name)
	}
}

// startForwarder runs this binary as -netfwd in the namespace: a relay with
// no delay from the namespace's veth address to Chromium's loopback port.
func startForwarder(ctx context.Context, ns *netpath.Netns) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := ns.Command(self, "-netfwd", net.JoinHostPort(ns.NSIP, fwdPort), net.JoinHostPort("127.0.0.1", chromeDevPort))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	// Its stdin closes when this process ends, and so does it; held until
	// then (a pipe end that is garbage-collected closes).
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		_ = cmd.Wait() // killed by the namespace's Close
		_ = in.Close() // nothing more to say to it
	}()
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("forwarder said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("forwarder in namespace %s: %w", ns.Name, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(15 * time.Second):
		return fmt.Errorf("forwarder in namespace %s not ready after 15 s", ns.Name)
	}
}

// netfwdMain is the -netfwd child: netfwd LISTEN TARGET. It prints "ready"
// once listening and runs until its stdin closes.
func netfwdMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bench -netfwd LISTEN TARGET")
		return 2
	}
	r, err := netpath.Listen(args[0], args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "netfwd:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	r.Close()
	return 0
}

// remotePhase is one setting of the paths.
type remotePhase struct {
	tag            string // in object names
	cdpRTT, apiRTT time.Duration
}

func (p remotePhase) String() string {
	s := fmt.Sprintf("CDP %d ms RTT", p.cdpRTT.Milliseconds())
	if p.apiRTT > 0 {
		s += fmt.Sprintf(", API %d ms RTT", p.apiRTT.Milliseconds())
	}
	return s
}

// remoteRow is one operation at one phase, against its raw baseline over the
// same path, with the CDP commands each sent per operation.
type remoteRow struct {
	phase            remotePhase
	name, baseName   string
	tw, base         sample
	twReq, baseReq   sample           // CDP commands per operation
	twTurn, baseTurn sample           // their turns (netpath.Counts)
	methods          []netpath.Counts // the agent's, per operation
	note             string
}

// parsePaths reads -remote-paths: comma-separated CDP RTTs in ms, each
// optionally +API RTT in ms ("0,10,50,10+10").
func parsePaths(s string) ([]remotePhase, error) {
	var out []remotePhase
	for _, f := range strings.Split(s, ",") {
		c, a, plus := strings.Cut(strings.TrimSpace(f), "+")
		cm, err := strconv.Atoi(c)
		am := 0
		if err == nil && plus {
			am, err = strconv.Atoi(a)
		}
		if err != nil || cm < 0 || am < 0 {
			return nil, fmt.Errorf("-remote-paths: %q: want CDP RTT in ms, optionally +API RTT in ms", f)
		}
		p := remotePhase{tag: fmt.Sprintf("c%d", cm), cdpRTT: time.Duration(cm) * time.Millisecond, apiRTT: time.Duration(am) * time.Millisecond}
		if am > 0 {
			p.tag += fmt.Sprintf("a%d", am)
		}
		out = append(out, p)
	}
	return out, nil
}

func remoteSection(ctx context.Context, l *lab, restCfg *rest.Config, rep *report) error {
	r, err := l.startRemote(ctx, restCfg)
	if err != nil {
		return err
	}
	defer r.stop()
	phases, err := parsePaths(l.cfg.remotePaths)
	if err != nil {
		return err
	}
	ns := l.cfg.remoteNs
	rep.remoteNS = r.ns.Name
	defer func() {
		if l, err := os.ReadFile("/proc/loadavg"); err == nil {
			rep.note("load average at the end of the remote section: " + strings.Join(strings.Fields(string(l))[:3], " "))
		}
	}()
	var held time.Duration // the longest one-way delay bytes in flight may still be held for
	for _, ph := range phases {
		r.setRTT(ph.cdpRTT, ph.apiRTT)
		logf("remote, %v: %d repetitions (cleanup: %v)", ph, l.cfg.remoteReps, ns)
		// A relay stamps each chunk with its delay as it reads it: the new
		// delay holds for every byte read from here on, and the bytes read
		// before it are through once the old one-way delay has passed.
		time.Sleep(held + 100*time.Millisecond)
		held = max(ph.cdpRTT, ph.apiRTT) / 2
		for _, step := range []func(context.Context, *lab, *remoteLab, remotePhase, *report) error{remoteSpawn, remoteOpen, remoteAction, remotePageLoad} {
			if err := step(ctx, l, r, ph, rep); err != nil {
				return fmt.Errorf("%v: %w", ph, err)
			}
		}
		for _, n := range ns {
			if err := remoteCleanup(ctx, l, r, ph, rep, n); err != nil {
				return fmt.Errorf("%v: cleanup of %d: %w", ph, n, err)
			}
		}
	}
	return nil
}

func remoteSession(ctx context.Context, l *lab, name string, pl twv1.Placement) error {
	s := newSession(name, pl)
	s.Spec.ProfileName = remoteProfile
	return l.k8s.Create(ctx, s)
}

// deleteRemoteWindow deletes a window and waits until its page is destroyed
// (seen on the remote raw connection) and the object is gone.
func deleteRemoteWindow(ctx context.Context, l *lab, r *remoteLab, w *twv1.BrowserWindow, page string) error {
	destroyed := r.raw.expectDestroyed(page)
	gone := l.api.expect(func(e apiEvent) bool { return e.Win != nil && e.Type == watch.Deleted && e.Win.Name == w.Name })
	if err := l.k8s.Delete(ctx, w); err != nil {
		destroyed.cancel()
		gone.cancel()
		return err
	}
	if _, err := destroyed.wait(30 * time.Second); err != nil {
		return fmt.Errorf("page %s of %s never closed: %w", page, w.Name, err)
	}
	if _, err := gone.wait(30 * time.Second); err != nil {
		return fmt.Errorf("window %s never went: %w", w.Name, err)
	}
	return nil
}

func remoteSpawn(ctx context.Context, l *lab, r *remoteLab, ph remotePhase, rep *report) error {
	sess := ph.tag + "-spawn"
	if err := remoteSession(ctx, l, sess, twv1.PlacementWindow); err != nil {
		return err
	}
	opener, _, err := l.openAndWait(ctx, newWindow(benchNS, sess+"-opener", sess, r.site.URL+"/blank-link"))
	if err != nil {
		return err
	}
	var k *clicker
	if err := poll(20*time.Second, func() (bool, error) {
		k, err = r.raw.clickerFor(ctx, opener.Status.TabID, "#open-landing")
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("element #open-landing never appeared: %v", err)
	}
	row := remoteRow{phase: ph, name: "spawn adoption: click on a target=_blank link", baseName: "click → Target.targetCreated (raw)",
		note: "from the raw client's mouseReleased to the watch's ADDED of the Spawned BrowserWindow; the click is the raw client's, over the same path"}
	for i := 0; i < l.cfg.remoteReps+1; i++ {
		rawSub := r.raw.events.expect(func(e cdpEvent) bool {
			return e.Method == "Target.targetCreated" && e.OpenerID == opener.Status.TabID
		})
		apiSub := l.api.expect(func(e apiEvent) bool {
			return e.Win != nil && e.Type == watch.Added && e.Win.Spec.Spawn != nil && e.Win.Spec.Spawn.OpenerTabID == opener.Status.TabID
		})
		a0, b0 := r.agtRelay.Counts(), r.rawRelay.Counts()
		t0, err := k.click(ctx)
		if err != nil {
			return err
		}
		re, err := rawSub.wait(10 * time.Second)
		if err != nil {
			return fmt.Errorf("spawn rep %d: no targetCreated: %w", i, err)
		}
		b1 := r.rawRelay.Counts()
		ae, err := apiSub.wait(20 * time.Second)
		if err != nil {
			return fmt.Errorf("spawn rep %d: no Spawned BrowserWindow: %w", i, err)
		}
		a1 := r.agtRelay.Counts()
		if i > 0 {
			row.add(ae.At.Sub(t0), re.At.Sub(t0), a1.Minus(a0), b1.Minus(b0))
		}
		destroyed := r.raw.expectDestroyed(re.TargetID)
		w := ae.Win
		if err := l.k8s.Patch(ctx, w, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Close"}}`))); err != nil {
			return err
		}
		if _, err := destroyed.wait(30 * time.Second); err != nil {
			return fmt.Errorf("spawned page %s never closed after disposition Close: %w", re.TargetID, err)
		}
		if err := l.deleteWindowAndWait(ctx, w, ""); err != nil {
			return err
		}
	}
	rep.remote = append(rep.remote, row)
	return deleteRemoteWindow(ctx, l, r, opener, opener.Status.TabID)
}

func (row *remoteRow) add(tw, base time.Duration, twReq, baseReq netpath.Counts) {
	row.tw = append(row.tw, ms(tw))
	row.base = append(row.base, ms(base))
	row.count(twReq, baseReq)
}

func (row *remoteRow) count(tw, base netpath.Counts) {
	row.twReq = append(row.twReq, float64(tw.Messages))
	row.baseReq = append(row.baseReq, float64(base.Messages))
	row.twTurn = append(row.twTurn, float64(tw.Turns))
	row.baseTurn = append(row.baseTurn, float64(base.Turns))
	row.methods = append(row.methods, tw)
}

func remoteOpen(ctx context.Context, l *lab, r *remoteLab, ph remotePhase, rep *report) error {
	for _, pl := range []struct {
		placement twv1.Placement
		kind      string
		newWindow bool
	}{{twv1.PlacementTab, "tab", false}, {twv1.PlacementWindow, "window", true}} {
		sess := ph.tag + "-open-" + pl.kind
		if err := remoteSession(ctx, l, sess, pl.placement); err != nil {
			return err
		}
		url := r.site.URL + "/landing"
		one := remoteRow{phase: ph, name: "open: " + pl.kind, baseName: "Target.createTarget (raw)",
			note: "create BrowserWindow (registered in its create) → the watch shows phase Open with tabId"}
		drv := remoteRow{phase: ph, name: "open: " + pl.kind + ", vs the driver's calls raw", baseName: "getTargets + createTarget + getWindowForTarget (raw)"}
		for i := 0; i < l.cfg.remoteReps+1; i++ {
			w := newWindow(benchNS, fmt.Sprintf("%s-%d", sess, i), sess, url)
			if err := l.register(ctx, w); err != nil {
				return err
			}
			a0 := r.agtRelay.Counts()
			w, d, err := l.openAndWait(ctx, w)
			if err != nil {
				return err
			}
			a1 := r.agtRelay.Counts()
			if err := deleteRemoteWindow(ctx, l, r, w, w.Status.TabID); err != nil {
				return err
			}
			b0 := r.rawRelay.Counts()
			t0 := time.Now()
			id, err := r.raw.createTarget(ctx, url, pl.newWindow)
			if err != nil {
				return err
			}
			rd, b1 := time.Since(t0), r.rawRelay.Counts()
			if err := r.raw.closeAndWait(ctx, id); err != nil {
				return err
			}
			c0 := r.rawRelay.Counts()
			t0 = time.Now()
			if id, err = r.raw.driverOpen(ctx, url, pl.newWindow); err != nil {
				return err
			}
			sd, c1 := time.Since(t0), r.rawRelay.Counts()
			if err := r.raw.closeAndWait(ctx, id); err != nil {
				return err
			}
			if i > 0 {
				one.add(d, rd, a1.Minus(a0), b1.Minus(b0))
				drv.add(d, sd, a1.Minus(a0), c1.Minus(c0))
			}
		}
		rep.remote = append(rep.remote, one, drv)
	}
	return nil
}

// chainRequests is how many requests the chain page makes one after another
// after its document.
const chainRequests = 10

// chainPath is the chain page's path for repetition i (its own url: nothing
// of one load is reused by the next).
func chainPath(i int) string { return fmt.Sprintf("/chain?n=%d&rep=%d", chainRequests, i) }

// remotePageLoad: a page that makes its requests one after another, opened by
// the raw client in the browser the agent guards (the browser boundary,
// internal/browser/cdp/boundary.go), timed by the page itself (navigation
// start → load end), against the same page before the agent connected. The
// agent's commands meanwhile are the boundary's answers to paused requests.
func remotePageLoad(ctx context.Context, l *lab, r *remoteLab, ph remotePhase, rep *report) error {
	row := remoteRow{phase: ph, name: fmt.Sprintf("page load: %d requests one after another (the page's own timing)", chainRequests+1),
		baseName: "the same page before the agent connected",
		note:     "a page the raw client opens in the browser the agent guards: navigation start → load event end, from the page's Navigation Timing"}
	for i := 0; i < l.cfg.remoteReps; i++ {
		a0 := r.agtRelay.Counts()
		d, err := r.raw.pageLoad(ctx, r.site.URL+chainPath(1000+i))
		if err != nil {
			return err
		}
		a1 := r.agtRelay.Counts()
		row.tw = append(row.tw, ms(d))
		row.count(a1.Minus(a0), netpath.Counts{})
	}
	row.base = append(row.base, r.loadBase...)
	rep.remote = append(rep.remote, row)
	return nil
}

func remoteAction(ctx context.Context, l *lab, r *remoteLab, ph remotePhase, rep *report) error {
	sess, window := ph.tag+"-action", ph.tag+"-action-page"
	if err := remoteSession(ctx, l, sess, twv1.PlacementWindow); err != nil {
		return err
	}
	w, _, err := l.openAndWait(ctx, newWindow(benchNS, window, sess, r.site.URL+"/two-send"))
	if err != nil {
		return err
	}
	var k *clicker
	if err := poll(20*time.Second, func() (bool, error) {
		k, err = r.raw.clickerFor(ctx, w.Status.TabID, "#send-later")
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("element #send-later never appeared: %v", err)
	}
	click := twv1.ActionStep{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: "Send later"}}
	row := remoteRow{phase: ph, name: "action round trip: one Click step", baseName: "mouse press + release (raw)",
		note: "create BrowserAction → the watch shows Succeeded; the raw click by a second DevTools client, its element located once"}
	for i := 0; i < l.cfg.remoteReps+1; i++ {
		a0 := r.agtRelay.Counts()
		d, err := l.runAction(ctx, fmt.Sprintf("%s-act-%d", ph.tag, i), sess, window, []twv1.ActionStep{click})
		if err != nil {
			return err
		}
		a1, b0 := r.agtRelay.Counts(), r.rawRelay.Counts()
		r0 := time.Now()
		if _, err := k.click(ctx); err != nil {
			return err
		}
		rd, b1 := time.Since(r0), r.rawRelay.Counts()
		if i > 0 {
			row.add(d, rd, a1.Minus(a0), b1.Minus(b0))
		}
	}
	rep.remote = append(rep.remote, row)
	return deleteRemoteWindow(ctx, l, r, w, w.Status.TabID)
}

func remoteCleanup(ctx context.Context, l *lab, r *remoteLab, ph remotePhase, rep *report, n int) error {
	url := r.site.URL + "/landing"
	reps := l.cfg.remoteReps / 4
	if n >= 50 {
		reps = l.cfg.remoteReps / 10
	}
	reps = max(reps, 1)
	row := remoteRow{phase: ph, name: fmt.Sprintf("cleanup: session with %d pages → last page gone", n), baseName: "closeTarget × n, concurrent (raw)",
		note: "delete a session with n new windows → the last Target.targetDestroyed on the raw connection"}
	for i := 0; i < reps; i++ {
		name := fmt.Sprintf("%s-clean-%d-%d", ph.tag, n, i)
		if err := remoteSession(ctx, l, name, twv1.PlacementWindow); err != nil {
			return err
		}
		ids, err := l.openPages(ctx, name, n, url)
		if err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond) // let the pages load and their status settle
		destroyed := r.raw.expectDestroyed(ids...)
		sessGone := l.api.expect(func(e apiEvent) bool { return e.Sess != nil && e.Type == watch.Deleted && e.Sess.Name == name })
		a0 := r.agtRelay.Counts()
		t0 := time.Now()
		if err := l.k8s.Delete(ctx, newSession(name, "")); err != nil {
			return err
		}
		de, err := destroyed.wait(120 * time.Second)
		if err != nil {
			return fmt.Errorf("pages of %s never all closed: %w", name, err)
		}
		a1 := r.agtRelay.Counts()
		if _, err := sessGone.wait(120 * time.Second); err != nil {
			return fmt.Errorf("session %s never went: %w", name, err)
		}
		rids, err := openOn(ctx, r.raw, url, n, "")
		if err != nil {
			return err
		}
		b0 := r.rawRelay.Counts()
		bd, err := closeAllOn(ctx, r.raw, rids)
		if err != nil {
			return err
		}
		b1 := r.rawRelay.Counts()
		row.tw = append(row.tw, ms(de.At.Sub(t0)))
		row.base = append(row.base, bd)
		row.count(a1.Minus(a0), b1.Minus(b0))
	}
	rep.remote = append(rep.remote, row)
	return nil
}

// remoteMarkdown is the remote section's table and notes.
func (r *report) remoteMarkdown() string {
	var b strings.Builder
	b.WriteString("\n## Remote pool: agent ↔ Chromium over a network path (ms)\n\n")
	fmt.Fprintf(&b, "Chromium runs in a network namespace of its own (%s), reached over a veth pair; the round-trip time is added by a user-space relay in the bench process (test/bench/netpath), because this kernel has no netem: each direction's bytes are held for RTT/2, in order, without throttling. The agent and the raw baseline each connect through their own relay with the same delay; the relay counts the CDP commands each sends (*cmds*: per operation, p50 and max over the repetitions, counted from the operation's start to its end) and their *turns*: runs of commands sent back to back with nothing from the browser delivered in between (a command awaited before the next is a turn of its own; pipelined ones share one; the browser's events count as something delivered, so turns can overstate the round trips waited for). \"API … RTT\" delays the agent's connection to the API server the same way (on loopback); the bench's client and the controller stay direct.\n\n", r.remoteNS)
	b.WriteString("| path | case | tabwarden p50 | p99 | baseline (same path) | base p50 | base p99 | ratio p50 | ratio p99 | (tw − base) p50 ÷ RTT | tabwarden cmds p50 (max) | turns p50 (max) | baseline cmds | turns | reps |\n")
	b.WriteString("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.remote {
		extra := "–"
		if x.phase.cdpRTT > 0 {
			extra = fmt.Sprintf("%.1f", (x.tw.p50()-x.base.p50())/ms(x.phase.cdpRTT))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f (%.0f) | %.0f (%.0f) | %.0f | %.0f | %d |\n", x.phase, x.name,
			fmtMS(x.tw.p50()), fmtMS(x.tw.p99()), x.baseName, fmtMS(x.base.p50()), fmtMS(x.base.p99()),
			ratio(x.tw.p50(), x.base.p50()), ratio(x.tw.p99(), x.base.p99()), extra,
			x.twReq.p50(), slices.Max(append(sample{0}, x.twReq...)), x.twTurn.p50(), slices.Max(append(sample{0}, x.twTurn...)),
			x.baseReq.p50(), x.baseTurn.p50(), len(x.tw))
	}
	b.WriteString("\nThe agent's CDP commands per operation, by method (summed over the repetitions ÷ repetitions; the driver's 1 s Target.getTargets refresh lands in some windows):\n\n")
	seen := map[string]bool{}
	for _, x := range r.remote {
		key := x.phase.String() + x.name
		if seen[key] || strings.Contains(x.name, "vs the driver's calls") {
			continue
		}
		seen[key] = true
		sum := netpath.Counts{ByMethod: map[string]int{}}
		for _, m := range x.methods {
			sum.Messages += m.Messages
			for k, v := range m.ByMethod {
				sum.ByMethod[k] += v
			}
		}
		fmt.Fprintf(&b, "- %s, %s: %s\n", x.phase, x.name, perOp(sum, len(x.methods)))
	}
	var notes []string
	for _, x := range r.remote {
		if x.note != "" && !slices.Contains(notes, x.name+": "+x.note) {
			notes = append(notes, x.name+": "+x.note)
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("- *" + strings.Replace(n, ": ", "*: ", 1) + ".\n")
		}
	}
	return b.String()
}

// perOp is a method breakdown divided by n operations.
func perOp(c netpath.Counts, n int) string {
	if n == 0 || len(c.ByMethod) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(c.ByMethod))
	for k := range c.ByMethod {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c.ByMethod[a] != c.ByMethod[b] {
			return c.ByMethod[b] - c.ByMethod[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(c.ByMethod[k])/float64(n)))
	}
	return strings.Join(parts, ", ")
}
