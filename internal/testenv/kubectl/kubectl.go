// Package kubectl is a small kubectl interpreter for tests: it carries out the
// command shapes that package hint writes (kubectl patch --type=merge, and echo
// '...' | kubectl create -f -), so that tests prove every hint is a call that
// works and a scripted agent can follow them.
package kubectl

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Run carries out a hint as kubectl would, with c (the caller's identity): the
// command shapes package hint writes, joined by " && ".
func Run(ctx context.Context, c client.Client, cmd string) error {
	for _, part := range strings.Split(cmd, " && ") {
		if err := run(ctx, c, strings.TrimSpace(part)); err != nil {
			return fmt.Errorf("%s: %w", part, err)
		}
	}
	return nil
}

var kinds = map[string]string{
	"browserwindow": "BrowserWindow", "browsersession": "BrowserSession", "browserprofile": "BrowserProfile", "browseraction": "BrowserAction",
}

func run(ctx context.Context, c client.Client, cmd string) error {
	switch {
	case strings.HasPrefix(cmd, "echo '") && strings.HasSuffix(cmd, "' | kubectl create -f -"):
		body := strings.TrimSuffix(strings.TrimPrefix(cmd, "echo '"), "' | kubectl create -f -")
		body = strings.ReplaceAll(body, `'\''`, "'")
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(body), &u.Object); err != nil {
			return err
		}
		return c.Create(ctx, u)
	case strings.HasPrefix(cmd, "kubectl patch "):
		// kubectl patch KIND NAME [-n NS] --type=merge -p 'JSON'
		head, js, ok := strings.Cut(cmd, " -p '")
		if !ok || !strings.HasSuffix(js, "'") {
			return fmt.Errorf("not a merge patch command")
		}
		f := strings.Fields(strings.TrimPrefix(head, "kubectl patch "))
		if len(f) < 2 {
			return fmt.Errorf("kind and name missing")
		}
		kind, ok := kinds[f[0]]
		if !ok {
			return fmt.Errorf("unknown kind %q", f[0])
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(twv1.GroupVersion.String())
		u.SetKind(kind)
		u.SetName(f[1])
		for i := 2; i < len(f); i++ {
			switch {
			case f[i] == "-n" && i+1 < len(f):
				u.SetNamespace(f[i+1])
				i++
			case f[i] == "--type=merge":
			default:
				return fmt.Errorf("unexpected argument %q", f[i])
			}
		}
		return c.Patch(ctx, u, client.RawPatch("application/merge-patch+json", []byte(strings.TrimSuffix(js, "'"))))
	}
	return fmt.Errorf("not a command this runner knows (kubectl patch --type=merge, or echo ... | kubectl create -f -)")
}
