// Package chromium finds and launches a headless Chromium for the cdp driver, its
// tests and `tabwarden up`.
package chromium

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
)

// EnvBinary overrides the Chromium binary.
const EnvBinary = "TABWARDEN_CHROMIUM"

// ErrNotFound says no Chromium binary was found.
var ErrNotFound = errors.New("chromium not found: install it with `apt-get install -y chromium` (Debian) or set " + EnvBinary)

// candidates in order of preference. The Debian /usr/bin/chromium is a shell
// wrapper that adds flags of its own; the real binary sits behind it.
var candidates = []string{"/usr/lib/chromium/chromium", "/usr/bin/chromium"}

// Find returns the Chromium binary to run: $TABWARDEN_CHROMIUM, the real Debian
// binary, the Debian wrapper, or chromium / chromium-browser / google-chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if isExec(p) {
			return p, nil
		}
		if lp, err := exec.LookPath(p); err == nil {
			return lp, nil
		}
		return "", fmt.Errorf("%s=%q is not an executable: %w", EnvBinary, p, ErrNotFound)
	}
	for _, c := range candidates {
		if isExec(c) {
			return c, nil
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if lp, err := exec.LookPath(name); err == nil {
			return lp, nil
		}
	}
	return "", ErrNotFound
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Version runs the binary with --version, e.g. "Chromium 156.0.8078.114".
func Version(ctx context.Context) (string, error) {
	bin, err := Find()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Options configures Launch.
type Options struct {
	// ExtraArgs are appended to the default flags.
	ExtraArgs []string
	// UserDataDir is the profile directory; empty means a fresh temporary one that
	// Close removes.
	UserDataDir string
	// Extensions are unpacked extension directories to load.
	Extensions []string
	// Headful drops --headless (needs a display).
	Headful bool
	// Stderr, when set, receives Chromium's stderr (after the DevTools line is parsed).
	Stderr io.Writer
	// StartTimeout bounds the wait for "DevTools listening"; default 30 s.
	StartTimeout time.Duration
	// Pipe drives the browser over --remote-debugging-pipe (its fds 3 and 4)
	// instead of a DevTools port: nothing listens, so no page, and no other
	// user of the machine, can reach the browser's control plane. Connect with
	// Process.Dial; WebSocketURL and HTTPURL stay empty.
	Pipe bool
	// StartURL is the page the browser opens at launch (default about:blank):
	// a page of the user's own, opened before any driver connects.
	StartURL string
}

// Process is a running Chromium.
type Process struct {
	// Binary that runs.
	Binary string
	// WebSocketURL is the browser-level DevTools endpoint (ws://127.0.0.1:port/devtools/browser/…).
	WebSocketURL string
	// HTTPURL is http://127.0.0.1:port, for /json/version.
	HTTPURL string
	// UserDataDir in use.
	UserDataDir string

	cmd       *exec.Cmd
	pipe      *pipeEnds // the parent's ends of --remote-debugging-pipe, until Dial takes them
	pipeMu    sync.Mutex
	tmpDir    bool
	done      chan struct{}
	waitErr   error
	closeOnce sync.Once
	closeErr  error
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://[^\s]+)`)

// BoundaryFeatures are the Chromium features every launch turns off because a
// page can make the browser process send a request to a url it names, past
// the cdp driver's browser-wide Fetch interception (internal/browser/cdp
// TestNoPageRouteReachesABlockedPort): FedCM fetches an identity provider's
// configURL (a GET of any path), the Payment Request API fetches a payment
// method's manifest (a HEAD of any path). Either closed a user's tab through
// a DevTools endpoint's /json/close/<id>
// (TestBrowserSideFetchesNeverReachTheDevToolsEndpoint).
var BoundaryFeatures = []string{"FedCm", "WebPayments"}

// headlessUnusedFeatures are the Chromium features a headless launch turns
// off: UI it builds for every window and never shows.
var headlessUnusedFeatures = []string{"WebUIOmniboxPopup", "WebUIOmniboxAimPopup"}

// DefaultArgs are the flags every launch uses (without --user-data-dir). The popup
// blocker stays on: real behaviour matters, and real input events are allowed to open popups.
func DefaultArgs(headful bool) []string {
	args := []string{
		"--no-sandbox",
		"--disable-gpu",
		"--disable-quic",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-dev-shm-usage",
		"--remote-debugging-port=0",
		// Never --remote-allow-origins=*: with it a page's websocket reaches
		// the DevTools endpoint (a page always sends its Origin; tabwarden's
		// client sends none).
	}
	// The browser boundary (docs/design.md): features whose requests the
	// browser process makes for a page, which the driver's Fetch interception
	// never pauses, so a page aims them at any port (the DevTools endpoint's
	// /json/close, tabwarden's own endpoints). One --disable-features flag:
	// Chromium honours only the last one, and DefaultArgs is also used as is.
	features := slices.Clone(BoundaryFeatures)
	if !headful {
		args = append([]string{"--headless"}, args...)
		// Chromium 156 builds the omnibox's popup for every window, as two
		// WebUI pages with a renderer each (browser_ui targets at
		// chrome://omnibox-popup.top-chrome/), which a headless browser
		// never shows. Without them a new window costs about a third less
		// CPU and opens about 40 % sooner, and its close leaves no UI
		// renderers to tear down (docs/design.md, "Chromium's own cost").
		// Chromium ignores feature names it does not know.
		features = append(features, headlessUnusedFeatures...)
	}
	return append(args, "--disable-features="+strings.Join(features, ","))
}

// MergeFeatureLists joins every --disable-features (and every
// --enable-features) in args into one flag where the first stood, keeping
// each name once in order. Chromium honours only the last of a repeated
// switch, so an operator's --disable-features=X among a launch's extra args
// would otherwise switch tabwarden's own list back on; a bare
// --disable-features (Chromium reads it as an empty list) would switch it
// off. Chromium takes a switch as --name or -name, with its value after =
// only; a lone -- ends its switches, and nothing after it is touched.
func MergeFeatureLists(args []string) []string {
	out := make([]string, 0, len(args))
	first := map[string]int{} // switch → its index in out
	seen := map[string]map[string]bool{}
	for k, arg := range args {
		if arg == "--" {
			return append(out, args[k:]...)
		}
		name, value, _ := strings.Cut(arg, "=")
		if n, ok := strings.CutPrefix(name, "--"); ok {
			name = n
		} else if n, ok := strings.CutPrefix(name, "-"); ok {
			name = n
		} else {
			name = ""
		}
		if name != "disable-features" && name != "enable-features" {
			out = append(out, arg)
			continue
		}
		i, had := first[name]
		if !had {
			i = len(out)
			first[name] = i
			seen[name] = map[string]bool{}
			out = append(out, "--"+name+"=")
		}
		for f := range strings.SplitSeq(value, ",") {
			if f = strings.TrimSpace(f); f == "" || seen[name][f] {
				continue
			}
			seen[name][f] = true
			if !strings.HasSuffix(out[i], "=") {
				out[i] += ","
			}
			out[i] += f
		}
	}
	return out
}

// Launch starts Chromium and waits until its DevTools endpoint answers.
func Launch(ctx context.Context, opts Options) (*Process, error) {
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	p := &Process{Binary: bin, UserDataDir: opts.UserDataDir, done: make(chan struct{})}
	if p.UserDataDir == "" {
		dir, err := os.MkdirTemp("", "tabwarden-chromium-")
		if err != nil {
			return nil, err
		}
		p.UserDataDir, p.tmpDir = dir, true
	}
	args := DefaultArgs(opts.Headful)
	args = append(args, "--user-data-dir="+p.UserDataDir)
	if len(opts.Extensions) > 0 {
		abs := make([]string, 0, len(opts.Extensions))
		for _, e := range opts.Extensions {
			a, err := filepath.Abs(e)
			if err != nil {
				p.cleanup()
				return nil, err
			}
			abs = append(abs, a)
		}
		list := strings.Join(abs, ",")
		args = append(args, "--load-extension="+list, "--disable-extensions-except="+list)
	}
	if opts.Pipe {
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--remote-debugging-port") })
		args = append(args, "--remote-debugging-pipe")
	}
	args = MergeFeatureLists(append(args, opts.ExtraArgs...))
	start := "about:blank"
	if opts.StartURL != "" {
		start = opts.StartURL
	}
	args = append(args, start)

	// Not CommandContext: the process must outlive the launch ctx; Close ends it.
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Crashpad and friends write their temporary files here; keep them inside
	// the profile so that Close removes them.
	cmd.Env = append(os.Environ(), "TMPDIR="+p.UserDataDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.cleanup()
		return nil, err
	}
	cmd.Stdout = io.Discard
	var child []*os.File
	if opts.Pipe {
		// fd 3: Chromium reads commands; fd 4: it writes replies and events.
		inR, inW, err := os.Pipe()
		if err != nil {
			p.cleanup()
			return nil, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			_, _ = inR.Close(), inW.Close() // nothing was started with them
			p.cleanup()
			return nil, err
		}
		cmd.ExtraFiles = []*os.File{inR, outW}
		child = cmd.ExtraFiles
		p.pipe = &pipeEnds{r: outR, w: inW}
	}
	err = cmd.Start()
	for _, f := range child {
		_ = f.Close() // the child's ends: Chromium holds its own copies
	}
	if err != nil {
		p.closePipe()
		p.cleanup()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p.cmd = cmd

	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		var head []string
		for sc.Scan() {
			line := sc.Text()
			if !sent {
				if m := devtoolsRE.FindStringSubmatch(line); m != nil {
					found <- m[1]
					sent = true
					continue
				}
				if len(head) < 20 {
					head = append(head, line)
				}
			}
			if opts.Stderr != nil {
				fmt.Fprintln(opts.Stderr, line)
			}
		}
		if !sent {
			found <- "\x00" + strings.Join(head, "\n")
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	if opts.Pipe {
		// No line to wait for: the first command over the pipe is answered
		// once the browser is up (the caller's dial bounds that wait).
		return p, nil
	}

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case u := <-found:
		if strings.HasPrefix(u, "\x00") {
			<-p.done
			p.cleanup()
			return nil, fmt.Errorf("chromium exited before DevTools was ready (%v): %s", p.waitErr, u[1:])
		}
		p.WebSocketURL = u
		if i := strings.Index(u, "/devtools/"); i > 0 {
			p.HTTPURL = "http://" + strings.TrimPrefix(u[:i], "ws://")
		}
		return p, nil
	case <-ctx.Done():
		_ = p.Close()
		return nil, ctx.Err()
	case <-t.C:
		_ = p.Close()
		return nil, fmt.Errorf("chromium: no DevTools endpoint after %v", timeout)
	}
}

// Exec starts bin with exactly args (nothing of DefaultArgs) plus
// --remote-debugging-pipe and BoundaryFeatures disabled, in a process group of its own, and returns at once:
// take the pipe with Pipe or Dial. It is how `tabwarden cdp-bridge` runs the
// pool's Chromium, whose flags (sandbox included) are the manifest's. A
// DevTools port flag in args is refused: the browser gets no port. Close ends
// the process group; UserDataDir stays whatever args say (nothing is removed).
func Exec(bin string, args []string, stderr io.Writer) (*Process, error) {
	for _, arg := range args {
		// Chromium takes -flag as well as --flag.
		a := "--" + strings.TrimLeft(arg, "-")
		if strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") ||
			strings.HasPrefix(a, "--remote-allow-origins") {
			return nil, fmt.Errorf("chromium: %s: the browser is driven over --remote-debugging-pipe and listens on no DevTools port; drop the flag", arg)
		}
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// BoundaryFeatures are off whatever the manifest says: merged into its own
	// --disable-features, if it has one.
	args = MergeFeatureLists(append([]string{"--disable-features=" + strings.Join(BoundaryFeatures, ",")}, args...))
	args = append(args, "--remote-debugging-pipe")
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close() // nothing was started with them
		return nil, err
	}
	// fd 3: Chromium reads commands; fd 4: it writes replies and events.
	cmd.ExtraFiles = []*os.File{inR, outW}
	err = cmd.Start()
	_, _ = inR.Close(), outW.Close() // the child's ends: Chromium holds its own copies
	if err != nil {
		_, _ = outR.Close(), inW.Close() // nothing was started with them
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Binary: bin, cmd: cmd, pipe: &pipeEnds{r: outR, w: inW}, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

type pipeEnds struct {
	r *os.File // Chromium's fd 4: replies and events
	w *os.File // Chromium's fd 3: commands
}

// Dial connects to a browser launched with Options.Pipe. The pipe is one
// connection for the life of the process: a second Dial, or one after the
// connection dropped, fails.
func (p *Process) Dial(ctx context.Context, onEvent func(wire.Event)) (*wire.Conn, error) {
	r, w, err := p.Pipe()
	if err != nil {
		return nil, err
	}
	return wire.NewPipe(r, w, onEvent), nil
}

// Pipe takes the parent's ends of --remote-debugging-pipe, for a caller that
// speaks the framing itself (NUL-ended JSON messages): r reads Chromium's fd 4
// (replies and events), w writes its fd 3 (commands). Like Dial, it works once.
func (p *Process) Pipe() (r io.ReadCloser, w io.WriteCloser, err error) {
	p.pipeMu.Lock()
	ends := p.pipe
	p.pipe = nil
	p.pipeMu.Unlock()
	if ends == nil {
		return nil, nil, errors.New("chromium: the DevTools pipe of this browser is in use or gone (it serves one connection; a browser launched without Options.Pipe has none)")
	}
	select {
	case <-p.done:
		_, _ = ends.r.Close(), ends.w.Close() // the browser is gone
		return nil, nil, fmt.Errorf("chromium exited: %v", p.waitErr)
	default:
	}
	return ends.r, ends.w, nil
}

// Err is how the process ended (its Wait error), once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// Pid is the browser process's id (the leader of its process group).
func (p *Process) Pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *Process) closePipe() {
	p.pipeMu.Lock()
	defer p.pipeMu.Unlock()
	if p.pipe != nil {
		_, _ = p.pipe.r.Close(), p.pipe.w.Close() // unused; nothing reads them
		p.pipe = nil
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Crash kills the whole process group at once (SIGKILL), as a crash would, and
// waits until the browser is gone. The profile directory stays (Close removes a
// temporary one).
func (p *Process) Crash() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Close kills the whole process group, waits for the browser to exit and removes
// a temporary profile directory.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		if p.cmd != nil && p.cmd.Process != nil {
			pid := p.cmd.Process.Pid
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(3 * time.Second):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				<-p.done
			}
			// Children that left the group (crashpad) or linger: kill the group again.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		p.closePipe()
		p.cleanup()
	})
	return p.closeErr
}

func (p *Process) cleanup() {
	if p.tmpDir && p.UserDataDir != "" {
		// Renderers may still be writing for a moment after the browser exits.
		for i := 0; i < 5; i++ {
			err := os.RemoveAll(p.UserDataDir)
			p.closeErr = err
			if err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
