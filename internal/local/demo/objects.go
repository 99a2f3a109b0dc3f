package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The demo's objects in the cluster, and waiting on them.

// reset removes what an earlier demo left (its session, windows and action).
func (d *demo) reset(ctx context.Context) error {
	for _, name := range []string{ClickAction, ActionName} {
		act := &twv1.BrowserAction{}
		act.Namespace, act.Name = d.ns, name
		if err := d.k8s.Delete(ctx, act); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	s := &twv1.BrowserSession{}
	s.Namespace, s.Name = d.ns, SessionName
	err := d.k8s.Delete(ctx, s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n(removing the session %s an earlier demo left)\n", SessionName)
	return d.waitFor(ctx, "the earlier demo's session to go", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		if apierrors.IsNotFound(err) {
			var ws twv1.BrowserWindowList
			err = d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName})
			return err == nil && len(ws.Items) == 0, err
		}
		return false, err
	})
}

// openWindow is an Open window of the session named name, on url u.
func (d *demo) openWindow(name, u string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserWindow"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: SessionName}, Source: twv1.SourceOpen, URL: u,
		},
	}
}

// spawned is the session's Spawned window, if adopted yet.
func (d *demo) spawned(ctx context.Context) (*twv1.BrowserWindow, error) {
	var ws twv1.BrowserWindowList
	if err := d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName, twv1.SourceLabel: "spawned"}); err != nil {
		return nil, err
	}
	if len(ws.Items) == 0 {
		return nil, nil
	}
	return &ws.Items[0], nil
}

// waitFor polls done until it reports true, at most Options.StepTimeout, and
// then fails with what it waited for and the last error.
func (d *demo) waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(d.o.StepTimeout)
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("tabwarden demo: waited %s for %s", d.o.StepTimeout, what)
			if last != nil {
				msg += " (last error: " + last.Error() + ")"
			}
			return errors.New(msg + "; is tabwarden up still running? `kubectl get browserprofiles` shows whether its agent is connected\n" + d.state(ctx))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// state says where the demo's session and its windows stand, for an error
// after a wait that timed out: each one's phase, its Ready
// condition, and what keeps it from going (its deletion and finalizers).
func (d *demo) state(ctx context.Context) string {
	var b strings.Builder
	s := &twv1.BrowserSession{}
	if err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: SessionName}, s); err != nil {
		fmt.Fprintf(&b, "  browsersession %s: %v\n", SessionName, err)
	} else {
		fmt.Fprintf(&b, "  browsersession %s: phase %s, %s%s\n", s.Name, s.Status.Phase, conditionText(s.Status.Conditions, twv1.ReadyCondition), goingText(&s.ObjectMeta))
	}
	var ws twv1.BrowserWindowList
	if err := d.k8s.List(ctx, &ws, client.InNamespace(d.ns), client.MatchingLabels{twv1.SessionLabel: SessionName}); err != nil {
		fmt.Fprintf(&b, "  browserwindows: %v\n", err)
		return b.String()
	}
	for _, w := range ws.Items {
		fmt.Fprintf(&b, "  browserwindow %s: %s %s, phase %s, %s%s\n", w.Name, w.Spec.Source, w.Spec.Disposition, w.Status.Phase, conditionText(w.Status.Conditions, twv1.ReadyCondition), goingText(&w.ObjectMeta))
	}
	return b.String()
}

// conditionText is a condition of t as "t=status reason: message".
func conditionText(cs []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(cs, t)
	if c == nil {
		return t + " not set"
	}
	return fmt.Sprintf("%s=%s %s: %s", t, c.Status, c.Reason, c.Message)
}

// goingText says whether o is being deleted, and its finalizers.
func goingText(o *metav1.ObjectMeta) string {
	out := ""
	if o.DeletionTimestamp != nil {
		out += ", deleted at " + o.DeletionTimestamp.UTC().Format(time.RFC3339)
	}
	if len(o.Finalizers) > 0 {
		out += ", finalizers " + strings.Join(o.Finalizers, ",")
	}
	return out
}
