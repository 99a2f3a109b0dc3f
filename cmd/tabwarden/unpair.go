package main

import (
	"context"
	"fmt"
	"io"

	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

// runUnpair asks the running extension agent to forget its pairing, over the same
// control socket as `tabwarden pair` (same OS user only).
func runUnpair(name string, args []string, stdout, stderr io.Writer) error {
	return withAgentControl(name, "Make the running extension agent forget its pairing with the tabwarden extension: the\n"+
		"pairing state is removed and the extension's connection is closed (it must pair again).", args, stderr, func(ctx context.Context, stateDir string) error {
		was, err := extension.RequestUnpair(ctx, stateDir)
		if err != nil {
			return err
		}
		if !was {
			fmt.Fprintln(stdout, "The agent had no pairing; nothing to forget.")
			return nil
		}
		fmt.Fprintln(stdout, "The agent forgot its pairing and closed the extension's connection.")
		fmt.Fprintln(stdout, "In Chrome, press Forget pairing in the tabwarden popup too; run `tabwarden pair` to pair again.")
		return nil
	})
}
