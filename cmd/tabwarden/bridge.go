package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tabwarden/tabwarden/internal/browser/chromium/bridge"
)

// runCDPBridge is `tabwarden cdp-bridge --socket PATH -- CHROMIUM ARGS...`: the
// pool pod's browser container. Chromium runs with --remote-debugging-pipe and
// no DevTools port; the agent, in another container, reaches the pipe through
// the socket (--cdp-endpoint unix:PATH).
func runCDPBridge(name string, args []string, _, stderr io.Writer) error {
	const synopsis = "Run Chromium with no DevTools port (--remote-debugging-pipe) and serve its pipe on a unix\n" +
		"socket to one client at a time, the agent (--cdp-endpoint unix:PATH). While no client is\n" +
		"connected, every request the agent's interception pauses fails. The bridge exits non-zero\n" +
		"when Chromium exits, and closes Chromium on SIGTERM.\n\n" +
		"  tabwarden cdp-bridge --socket /run/tabwarden/cdp/cdp.sock -- /usr/lib/chromium/chromium --headless ..."
	fs := newFlagSet(name, synopsis, stderr)
	setUsage(fs, "tabwarden "+name+" --socket PATH [flags] -- CHROMIUM [ARGS...]", synopsis)
	var (
		socket string
		lf     logFlags
	)
	fs.StringVar(&socket, "socket", "", "unix socket to serve the pipe on (required; its directory is created 0700 and must be the bridge user's, writable by no one else)")
	lf.bind(fs, false)
	if err := fs.Parse(args); err != nil {
		return parse(fs, args) // prints the usage error, or help
	}
	rest := fs.Args()
	if dash := fs.ArgsLenAtDash(); dash != 0 || len(rest) == 0 {
		fmt.Fprintf(stderr, "want the Chromium to run after --, e.g. -- /usr/lib/chromium/chromium --headless (got %q)\n", strings.Join(rest, " "))
		fs.Usage()
		return errUsage
	}
	if socket == "" {
		fmt.Fprintln(stderr, "--socket is required")
		fs.Usage()
		return errUsage
	}
	log, err := lf.setup(stderr)
	if err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	return bridge.Run(ctx, bridge.Options{Socket: socket, Binary: rest[0], Args: rest[1:], Stderr: os.Stderr, Logger: log.WithName("cdp-bridge")})
}
