package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

// runPair asks the running extension agent for a pairing code, over its
// control socket (same OS user only), and prints how to pair with it.
func runPair(name string, args []string, stdout, stderr io.Writer) error {
	return withAgentControl(name, "Ask the running extension agent for a pairing code (single use, valid five minutes)\n"+
		"and print how to pair the tabwarden extension in your Chrome with it.", args, stderr, func(ctx context.Context, stateDir string) error {
		p, err := extension.RequestPairing(ctx, stateDir)
		if err != nil {
			return fmt.Errorf("%w\n(start one first: `tabwarden up`, or `tabwarden agent --driver extension --profile my-chrome --state-dir %s`)", err, stateDir)
		}
		fmt.Fprintf(stdout, "Pairing code: %s   (single use, expires %s, in %s)\n\n", p.Code,
			p.Expires.Local().Format("15:04:05"), time.Until(p.Expires).Round(time.Second))
		fmt.Fprintf(stdout, "To pair your Chrome:\n")
		fmt.Fprintf(stdout, "  1. Open chrome://extensions, turn on Developer mode, and Load unpacked: the extension/ directory of tabwarden.\n")
		fmt.Fprintf(stdout, "  2. Click the tabwarden icon in the toolbar (pin it from the puzzle-piece menu).\n")
		_, port, _ := net.SplitHostPort(p.Addr)
		fmt.Fprintf(stdout, "  3. Enter the code %s and the agent's port %s, then press Pair.\n", p.Code, port)
		fmt.Fprintf(stdout, "  4. Check: kubectl get browserprofiles   (the extension profile shows Connected True)\n")
		fmt.Fprintf(stdout, "\nPairing again replaces the previous pairing; `tabwarden unpair` forgets it.\n")
		return nil
	})
}

// withAgentControl is a command that talks to the running extension agent
// over the control socket in its state directory (pair, unpair): it parses
// --state-dir and runs do with it until a signal ends ctx.
func withAgentControl(name, synopsis string, args []string, stderr io.Writer, do func(ctx context.Context, stateDir string) error) error {
	fs := newFlagSet(name, synopsis, stderr)
	var stateDir string
	fs.StringVar(&stateDir, "state-dir", defaultStateDir(), "state directory of the running agent (tabwarden up uses .tabwarden/state)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	return do(ctx, stateDir)
}
