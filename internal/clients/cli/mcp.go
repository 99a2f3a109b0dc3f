package cli

import (
	"context"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/internal/clients/mcpserver"
)

func newMCP(env *Env) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve tabwarden's tools to an AI agent over MCP (stdio), with your kubeconfig",
		Long: `Serve a Model Context Protocol server on standard input and output. Its tools list the browser
profiles, start a session, open windows, list what the session owns, acknowledge spawned windows,
observe and act on pages, and finish (waiting, up to --timeout, until the session is Finished),
through the API server with the kubeconfig flags' identity and namespace. A refusal is a tool
error whose text and structured content (error: kind, reason, message, hint) carry the guard's
reason, message and hint, naming the tools' parameters.

The server holds every session it starts or is given (it renews the session's Lease) while it
runs. When the agent exits, so does the server: a session it did not finish is abandoned after
its spec.abandonAfter (start_session's abandon_after, default 15m) and its temporary pages close.

An agent's MCP configuration:

  {"mcpServers": {"tabwarden": {"command": "tabwarden",
    "args": ["mcp", "--kubeconfig", "/home/me/.kube/config", "-n", "default"]}}}`,
		Args: args(0, 0, ""),
		RunE: func(c *cobra.Command, _ []string) error {
			o, err := env.Ops()
			if err != nil {
				return err
			}
			// The server holds the sessions it starts or is given while it
			// runs: when its client exits, stdin closes, Run returns and the
			// holds stop, so those sessions are abandoned after abandonAfter.
			ctx, stop := context.WithCancel(c.Context())
			defer stop()
			s := mcpserver.New(o, mcpserver.Options{Version: env.Version, Timeout: timeout, Hold: ctx})
			t := &mcp.IOTransport{Reader: io.NopCloser(c.InOrStdin()), Writer: nopWriteCloser{c.OutOrStdout()}}
			return s.Run(ctx, t)
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long a tool waits for a session to be placed, a window to open, an action or a session to finish")
	return c
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
