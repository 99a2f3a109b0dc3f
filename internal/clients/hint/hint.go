// Package hint writes the corrected calls that guards and conditions teach: each
// is a command a user or an agent can run as it is. Every hint tabwarden prints
// comes from here, so that one command shape is written once.
package hint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Ack is the command that gives a window a disposition.
func Ack(namespace, window string, d twv1.Disposition) string {
	return fmt.Sprintf(`kubectl patch browserwindow %s -n %s --type=merge -p '{"spec":{"disposition":"%s"}}'`, window, namespace, d)
}

// AckAll acknowledges each window with d, one command after the other.
func AckAll(namespace string, windows []string, d twv1.Disposition) string {
	cmds := make([]string, 0, len(windows))
	for _, w := range windows {
		cmds = append(cmds, Ack(namespace, w, d))
	}
	return strings.Join(cmds, " && ")
}

// Resume is the user's command that ends a session's wait for them.
func Resume(namespace, session string) string {
	return fmt.Sprintf(`kubectl patch browsersession %s -n %s --type=merge -p '{"spec":{"state":"Active"}}'`, session, namespace)
}

// Hold is the command that holds a session (renews its Lease) until interrupted.
func Hold(namespace, session string) string {
	return fmt.Sprintf(`kubectl tabwarden hold %s -n %s`, session, namespace)
}

// Keepalive is the command that gives a session a keepalive policy.
func Keepalive(namespace, session, interval string) string {
	return fmt.Sprintf(`kubectl patch browsersession %s -n %s --type=merge -p '{"spec":{"keepalive":{"interval":"%s"}}}'`, session, namespace, interval)
}

// Admit is the admin's command that makes profile p admit namespace ns, on top
// of the namespaces it already lists (a merge patch replaces the list).
func Admit(p *twv1.BrowserProfile, ns string) string {
	list := append(slices.Clone(p.Spec.Namespaces), ns)
	slices.Sort(list)
	list = slices.Compact(list)
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"namespaces": list}})
	return fmt.Sprintf("kubectl patch browserprofile %s --type=merge -p '%s'", p.Name, b)
}

// ReleaseFinalizer lets a window go without its agent closing the page.
func ReleaseFinalizer(namespace, window string) string {
	return fmt.Sprintf(`kubectl patch browserwindow %s -n %s --type=merge -p '{"metadata":{"finalizers":null}}'`, window, namespace)
}

// Create is the command that creates obj (its apiVersion and kind must be set):
// the object as one line of JSON piped into kubectl create. Quotes in the JSON
// are escaped for the single-quoted shell string.
func Create(obj client.Object) string {
	b, _ := json.Marshal(obj)
	return fmt.Sprintf("echo '%s' | kubectl create -f -", strings.ReplaceAll(string(b), "'", `'\''`))
}

// Action is the command that creates a BrowserAction like a (same session,
// thread, window, profile) with these steps, under a generated name.
func Action(a *twv1.BrowserAction, steps ...twv1.ActionStep) string {
	n := &twv1.BrowserAction{}
	n.APIVersion, n.Kind = twv1.GroupVersion.String(), "BrowserAction"
	n.Namespace = a.Namespace
	n.GenerateName = a.Spec.SessionRef.Name + "-"
	n.Spec = twv1.BrowserActionSpec{SessionRef: a.Spec.SessionRef, Thread: a.Spec.Thread, WindowRef: a.Spec.WindowRef, ProfileName: a.Spec.ProfileName, Steps: steps}
	b, _ := json.Marshal(map[string]any{"apiVersion": n.APIVersion, "kind": n.Kind,
		"metadata": map[string]any{"generateName": n.GenerateName, "namespace": n.Namespace}, "spec": n.Spec})
	return fmt.Sprintf("echo '%s' | kubectl create -f -", strings.ReplaceAll(string(b), "'", `'\''`))
}

// Observe is the command that observes the action's window afresh.
func Observe(a *twv1.BrowserAction) string {
	return Action(a, twv1.ActionStep{Type: twv1.StepObserve})
}
