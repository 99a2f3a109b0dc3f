// Package cli is `kubectl tabwarden` (the kubectl-tabwarden plugin) and the
// same verbs as `tabwarden <verb>`: owned, ack, finish, cleanup, profiles, act
// and mcp. The kubeconfig flags (--kubeconfig, --context, -n, ...) and -o behave
// as in kubectl. The work itself is internal/clients/ops, shared with the MCP server.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/ops"
)

// Verbs are the commands of this package; `tabwarden <verb>` routes them here.
var Verbs = []string{"owned", "ack", "finish", "cleanup", "profiles", "act", "mcp"}

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitUsage   = 2
	ExitRefused = 3
)

// Scheme has the built-in kinds and tabwarden's.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := twv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Env is what a command runs with; tests replace Now.
type Env struct {
	Streams genericiooptions.IOStreams
	// Config are kubectl's kubeconfig flags.
	Config *genericclioptions.ConfigFlags
	// Now is the clock of AGE columns.
	Now func() time.Time
	// Name is how the user calls the root: "kubectl tabwarden" or "tabwarden".
	Name string
	// Version is printed by --version.
	Version string
	// Extra are more commands of the binary's tree, for its help and shell
	// completion (the tabwarden binary's roles: up, controller, agent...).
	Extra []*cobra.Command
}

// Ops connects to the API server with the kubeconfig flags.
func (e *Env) Ops() (*ops.Ops, error) {
	cfg, err := e.Config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes API to talk to: %w (pass --kubeconfig or set KUBECONFIG)", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	ns, _, err := e.Config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	return &ops.Ops{Client: c, Namespace: ns, Command: e.Name}, nil
}

func (e *Env) table(wide bool, ns string) ops.Table {
	return ops.Table{Wide: wide, Now: e.Now(), Command: e.Name, Namespace: ns}
}

// usageError is a wrong call: exit code 2.
type usageError struct{ error }

// exitCode is an error already printed, ending with code.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// NewCommand is the command tree, named name ("kubectl tabwarden" for the
// plugin, "tabwarden" in the tabwarden binary).
func NewCommand(env *Env) *cobra.Command {
	if env.Config == nil {
		env.Config = genericclioptions.NewConfigFlags(true)
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Name == "" {
		env.Name = "kubectl tabwarden"
	}
	root := &cobra.Command{
		Use:   strings.ReplaceAll(env.Name, " ", "-"),
		Short: "What AI agents' browser sessions own, and acknowledging, acting and cleaning up in them",
		Long: `kubectl tabwarden shows what a tabwarden BrowserSession owns and drives it with the guards' answers:
every refusal names a stable reason and the corrected call.`,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: env.Name},
		SilenceUsage:      true,
		SilenceErrors:     true,
		Version:           env.Version,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
	}
	root.SetIn(env.Streams.In)
	root.SetOut(env.Streams.Out)
	root.SetErr(env.Streams.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nSee '%s --help'.", err, c.CommandPath())}
	})
	env.Config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newOwned(env), newAck(env), newFinish(env), newCleanup(env), newProfiles(env), newAct(env), newMCP(env), newHold(env),
	)
	root.AddCommand(env.Extra...)
	addCompletion(env, root)
	return root
}

// Main runs the command tree with args and returns the exit code: 0, 1 for an
// error, 2 for a wrong call, 3 for a refusal by a guard.
func Main(env *Env, args []string) int {
	root := NewCommand(env)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(env.Streams.ErrOut, "error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.Contains(err.Error(), "accepts ") || strings.Contains(err.Error(), "requires ") {
		return ExitUsage
	}
	if e, ok := ops.AsError(err); ok && e.Kind == ops.Refused {
		return ExitRefused
	}
	return ExitError
}

// args is cobra.ExactArgs/MinimumNArgs with a message that shows the call.
func args(min, max int, use string) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if len(a) < min || (max >= 0 && len(a) > max) {
			return usageError{fmt.Errorf("usage: %s %s\nSee '%s --help'.", c.CommandPath(), use, c.CommandPath())}
		}
		return nil
	}
}

// output is -o: "", wide, or one of kubectl's printers (json, yaml, name, jsonpath, go-template).
type output struct {
	flags *genericclioptions.PrintFlags
}

func addOutput(c *cobra.Command) *output {
	pf := genericclioptions.NewPrintFlags("").WithTypeSetter(Scheme())
	pf.AddFlags(c)
	f := c.Flags().Lookup("output")
	f.Usage = "Output format: wide, json, yaml, name, jsonpath=..., go-template=... (default: a table)"
	return &output{flags: pf}
}

func (o *output) format() string { return *o.flags.OutputFormat }

func (o *output) table() bool { return o.format() == "" || o.format() == "wide" }

func (o *output) wide() bool { return o.format() == "wide" }

// print prints obj (its kind set: see typed) with kubectl's printers.
func (o *output) print(obj runtime.Object, out io.Writer) error {
	p, err := o.flags.ToPrinter()
	if err != nil {
		if genericclioptions.IsNoCompatiblePrinterError(err) {
			return usageError{fmt.Errorf("%w, or wide", err)}
		}
		return err
	}
	return p.PrintObj(obj, out)
}

// typed sets the apiVersion and kind of objects read with the typed client (the
// printers of -o json|yaml need them; so does `kubectl apply` of the output).
func typed[T runtime.Object](objs []T) []T {
	s := Scheme()
	for _, obj := range objs {
		if gvks, _, err := s.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
	}
	return objs
}
