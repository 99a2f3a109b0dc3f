// Command tabwarden is tabwarden's one binary: the controller and agent roles,
// `pair` for the Chrome extension, and `up`, everything on one machine.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tabwarden/tabwarden/internal/clients/cli"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

const usage = `tabwarden lets AI agents use real Chrome browsers without leaving litter.

Usage:
  tabwarden <command> [flags]

Commands:
  up          run everything on this machine: an embedded kube-apiserver and etcd,
              the controller, a headless Chromium with an agent, and the extension host
  demo        play the incident step by step against a running tabwarden up (--start: start one)
  controller  run the controller role (sessions, window registration, cleanup)
  agent       run an agent for one browser profile (drivers: cdp, extension)
  cdp-bridge  run Chromium with no DevTools port and serve its pipe to the agent on a unix socket
  pair        print a code to pair the tabwarden Chrome extension with a running agent
  unpair      make a running agent forget its pairing with the Chrome extension
  version     print the version

Using sessions (also a kubectl plugin: kubectl tabwarden <command>; kubectl's
--kubeconfig, --context, -n and -o):
  owned       list what a session owns: opened, spawned and bound windows
  ack         give windows a disposition (keep, close, temporary)
  finish      finish a session: its temporary pages close
  cleanup     close every page a session owns now (with --yes)
  profiles    list browser profiles: connected, sessions, tabs, admitted namespaces
  act         drive a window of a session: observe, click, type... and print the result
  mcp         serve these to an AI agent over MCP (stdio)

Run 'tabwarden <command> -h' for a command's flags.
`

// command is one subcommand: it parses args and runs.
type command func(name string, args []string, stdout, stderr io.Writer) error

var commands = map[string]command{
	"up":         runUp,
	"demo":       runDemo,
	"controller": runController,
	"agent":      runAgent,
	"cdp-bridge": runCDPBridge,
	"pair":       runPair,
	"unpair":     runUnpair,
	"version":    runVersion,
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "-version", "--version":
		name = "version"
	}
	if slices.Contains(cli.Verbs, name) || slices.Contains(completionCommands, name) {
		// The client logs nothing a user needs; errors come back as errors.
		ctrl.SetLogger(logr.Discard())
		return cli.Main(&cli.Env{
			Streams: genericiooptions.IOStreams{In: os.Stdin, Out: stdout, ErrOut: stderr},
			Name:    "tabwarden",
			Version: fullVersion(),
			Extra:   roleCommands(stdout, stderr),
		}, args)
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "tabwarden: unknown command %q\n\n%s", name, usage)
		return 2
	}
	err := cmd(name, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "tabwarden %s: %v\n", name, err)
		return 1
	}
}

// completionCommands are cobra's: `tabwarden completion bash|zsh|fish|powershell`
// writes a completion script; the shells call __complete.
var completionCommands = []string{"completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd}

// roleCommands are the commands of this binary outside internal/clients/cli, as cobra
// commands for the shared help and completion; each parses its own flags.
func roleCommands(stdout, stderr io.Writer) []*cobra.Command {
	shorts := map[string]string{
		"up":         "Run everything on this machine: kube-apiserver and etcd, the controller, Chromium with an agent, the extension host",
		"demo":       "Play the incident step by step against a running tabwarden up",
		"controller": "Run the controller role",
		"agent":      "Run an agent for one browser profile",
		"cdp-bridge": "Run Chromium with no DevTools port and serve its pipe to the agent on a unix socket",
		"pair":       "Print a code to pair the tabwarden Chrome extension with a running agent",
		"unpair":     "Make a running agent forget its pairing with the Chrome extension",
		"version":    "Print the version",
	}
	var cs []*cobra.Command
	for name, run := range commands {
		cs = append(cs, &cobra.Command{
			Use: name, Short: shorts[name], DisableFlagParsing: true,
			RunE: func(_ *cobra.Command, args []string) error { return run(name, args, stdout, stderr) },
		})
	}
	return cs
}

// errUsage is returned after the flag package printed a usage error.
var errUsage = errors.New("usage")

// newFlagSet is a FlagSet whose errors come back to dispatch. Its flags are
// GNU-style (--flag value, --flag=value), like the verbs' and kubectl's, and
// its help is laid out as theirs (see setUsage).
func newFlagSet(name, synopsis string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tabwarden "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	setUsage(fs, "tabwarden "+name+" [flags]", synopsis)
	return fs
}

// setUsage makes fs's help the layout cobra gives the verbs: what the command
// does, then Usage: with its call line, then Flags:.
func setUsage(fs *pflag.FlagSet, call, synopsis string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nUsage:\n  %s\n\nFlags:\n%s", synopsis, call, fs.FlagUsages())
	}
}

func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		fmt.Fprintf(fs.Output(), "%v\n", err)
		fs.Usage()
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return errUsage
	}
	return nil
}

// goFlags adds flags defined on a standard library FlagSet by bind (zap's,
// controller-runtime's --kubeconfig) to fs, GNU-style.
func goFlags(fs *pflag.FlagSet, bind func(*flag.FlagSet)) {
	gfs := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	bind(gfs)
	fs.AddGoFlagSet(gfs)
}

// logFlags are the logging flags every long-running command takes:
// controller-runtime's zap flags (--zap-devel, --zap-encoder, --zap-log-level,
// --zap-stacktrace-level, --zap-time-encoding) and --log-level, the older name
// of --zap-log-level, kept working.
type logFlags struct {
	opts  crzap.Options
	level string
}

func (l *logFlags) bind(fs *pflag.FlagSet, devel bool) {
	// Info unless asked: --zap-devel alone would turn on debug logging.
	l.opts = crzap.Options{Development: devel, Level: zapcore.InfoLevel}
	if devel {
		l.opts.TimeEncoder = zapcore.TimeEncoderOfLayout("15:04:05.000")
	}
	goFlags(fs, l.opts.BindFlags)
	fs.StringVar(&l.level, "log-level", "", "the older name of --zap-log-level: debug, info, error, or a number (higher is more verbose)")
}

// quietByDefault makes warnings and errors the default level (an explicit
// --zap-log-level or --log-level still wins): for a command whose own output,
// not the roles' logs, is what its user reads.
func (l *logFlags) quietByDefault(fs *pflag.FlagSet) {
	if !fs.Changed("zap-log-level") && l.level == "" {
		l.opts.Level = zapcore.WarnLevel
	}
}

// setup builds the logger and installs it as controller-runtime's.
func (l *logFlags) setup(stderr io.Writer) (logr.Logger, error) {
	if l.level != "" {
		lvl, err := parseLevel(l.level)
		if err != nil {
			return logr.Discard(), err
		}
		l.opts.Level = lvl
	}
	log := crzap.New(crzap.UseFlagOptions(&l.opts), crzap.WriteTo(stderr))
	ctrl.SetLogger(log)
	return log, nil
}

func parseLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 0 || n > 127 {
		return 0, fmt.Errorf("--log-level %q: want debug, info, error or a verbosity 0-127", s)
	}
	// logr's V(n) is zap level -n.
	return zapcore.Level(-n), nil
}

// bindKubeconfig adds --kubeconfig to fs; config.GetConfig then uses it, else
// the KUBECONFIG environment variable, the in-cluster config, or ~/.kube/config.
func bindKubeconfig(fs *pflag.FlagSet) { goFlags(fs, config.RegisterFlags) }

func runVersion(name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(name, "Print the version.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tabwarden %s\n", fullVersion())
	return nil
}

func fullVersion() string {
	v := version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	return v + " " + bi.GoVersion
}
