// Command kubectl-tabwarden is the kubectl plugin: `kubectl tabwarden owned`,
// `ack`, `finish`, `cleanup`, `profiles`, `act` and `mcp`. The same verbs are
// `tabwarden <verb>` in the tabwarden binary. Install it on PATH (make plugin).
package main

import (
	"os"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tabwarden/tabwarden/internal/clients/cli"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func main() {
	// The client logs nothing a user needs; errors come back as errors.
	ctrllog.SetLogger(logr.Discard())
	env := &cli.Env{
		Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Name:    "kubectl tabwarden",
		Version: version,
	}
	os.Exit(cli.Main(env, os.Args[1:]))
}
