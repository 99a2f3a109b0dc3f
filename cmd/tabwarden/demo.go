package main

import (
	"io"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tabwarden/tabwarden/internal/local/demo"
	"github.com/tabwarden/tabwarden/internal/local/up"
)

func runDemo(name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(name, "Play the incident tabwarden exists for against a running `tabwarden up`, step by step: a session\n"+
		"opens the fixture site's contacts page, a click spawns a compose popup, tabwarden adopts it, refuses the\n"+
		"session's next step until it is acknowledged, and closes everything when the session finishes. Each step\n"+
		"prints the kubectl commands a user would run and what they would see.", stderr)
	var o demo.Options
	fs.StringVar(&o.Dir, "dir", up.DefaultDir, "the --dir of the running tabwarden up (its up.json and kubeconfig)")
	fs.BoolVar(&o.Start, "start", false, "when no tabwarden up runs in --dir, start one for the demo and stop it after")
	fs.DurationVar(&o.Pause, "pause", 0, "wait this long after each step, to read along (e.g. 3s)")
	fs.DurationVar(&o.StepTimeout, "step-timeout", 90*time.Second, "how long each step may take")
	fs.StringVar(&o.Up.ExtensionAddr, "extension-addr", up.ExtensionOff, `with --start: the extension host's address ("off": none, so a running agent's port is never taken)`)
	if err := parse(fs, args); err != nil {
		return err
	}
	// The roles of a tabwarden up started here log nowhere: the demo's output is the point.
	ctrl.SetLogger(logr.Discard())
	o.Out, o.Progress = stdout, stderr
	ctx, stop := signalContext()
	defer stop()
	return demo.Run(ctx, o)
}
