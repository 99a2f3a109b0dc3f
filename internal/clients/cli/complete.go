package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Shell completion: cobra's `completion bash|zsh|fish|powershell` and its
// hidden __complete, with the names of sessions, windows and profiles read
// from the API server with the kubeconfig flags. Through kubectl, the shipped
// kubectl_complete-tabwarden script calls `kubectl-tabwarden __complete`.

// completeNames completes the names of the objects list lists, in the
// kubeconfig's namespace, for the positional arguments at positions (all when
// empty). It never fails a completion: no API, no names.
func completeNames(env *Env, list func() client.ObjectList, positions ...int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(positions) > 0 && !containsInt(positions, len(args)) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		o, err := env.Ops()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(c.Context(), 5*time.Second)
		defer cancel()
		l := list()
		var opts []client.ListOption
		if _, cluster := l.(*twv1.BrowserProfileList); !cluster {
			opts = append(opts, client.InNamespace(o.Namespace))
		}
		if err := o.Client.List(ctx, l, opts...); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, n := range objectNames(l) {
			if strings.HasPrefix(n, toComplete) {
				names = append(names, n)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func objectNames(l client.ObjectList) []string {
	var names []string
	switch l := l.(type) {
	case *twv1.BrowserSessionList:
		for i := range l.Items {
			names = append(names, l.Items[i].Name)
		}
	case *twv1.BrowserWindowList:
		for i := range l.Items {
			names = append(names, l.Items[i].Name)
		}
	case *twv1.BrowserProfileList:
		for i := range l.Items {
			names = append(names, l.Items[i].Name)
		}
	}
	return names
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func sessions() client.ObjectList { return &twv1.BrowserSessionList{} }
func windows() client.ObjectList  { return &twv1.BrowserWindowList{} }
func profiles() client.ObjectList { return &twv1.BrowserProfileList{} }

// completeFlag registers the completion of a flag's value with names of list.
func completeFlag(env *Env, c *cobra.Command, flag string, list func() client.ObjectList) {
	// Only fails for a flag that does not exist: a programming error caught by the tests.
	if err := c.RegisterFlagCompletionFunc(flag, completeNames(env, list)); err != nil {
		panic(err)
	}
}

// addCompletion gives the verbs of root their completions: session, window
// and profile names where they take them, and ack's dispositions last.
func addCompletion(env *Env, root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "owned", "finish", "cleanup", "act", "hold":
			c.ValidArgsFunction = completeNames(env, sessions, 0)
		case "profiles":
			c.ValidArgsFunction = completeNames(env, profiles)
		case "ack":
			windowNames := completeNames(env, windows)
			sessionNames := completeNames(env, sessions, 0)
			c.ValidArgsFunction = func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				all, _ := c.Flags().GetBool("all-unacked") // defined below; false when absent
				var names []cobra.Completion
				switch {
				case all && len(args) == 0:
					names, _ = sessionNames(c, args, toComplete)
				case all:
				default:
					names, _ = windowNames(c, args, toComplete)
				}
				if len(args) > 0 {
					for _, d := range []string{"keep", "close", "temporary"} {
						if strings.HasPrefix(d, toComplete) {
							names = append(names, d)
						}
					}
				}
				return names, cobra.ShellCompDirectiveNoFileComp
			}
		}
		if c.Name() == "act" {
			completeFlag(env, c, "window", windows)
		}
	}
}
