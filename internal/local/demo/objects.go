package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
			return errors.New(msg + "; is tabwarden up still running? `kubectl get browserprofiles` shows whether its agent is connected")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
