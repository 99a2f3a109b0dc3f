// Command kubectl-tabwarden is the kubectl plugin: `kubectl tabwarden owned`,
// `ack`, `finish`, `cleanup`, `profiles`, `act` and `mcp`. The same verbs are
// `tabwarden <verb>` in the tabwarden binary. Install it on PATH (make plugin).
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/tabwarden/tabwarden/internal/cli"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

func main() {
	env := &cli.Env{
		Streams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Name:    "kubectl tabwarden",
		Version: version,
	}
	os.Exit(cli.Main(env, os.Args[1:]))
}
