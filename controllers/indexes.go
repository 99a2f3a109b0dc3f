// Package controllers holds tabwarden's controller role: the BrowserSession
// reconciler (registration, spawn gating, status, lifecycle, finalizer GC) and
// the BrowserWindow registration reconciler.
package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// WindowSessionIndex indexes BrowserWindows by spec.sessionRef.name.
const WindowSessionIndex = twv1.SessionRefIndex

// SessionProfileIndex indexes BrowserSessions by status.profileName (their
// placement): the controller counts a profile's sessions from its own cache.
const SessionProfileIndex = "status.profileName"

// SetupIndexes registers the field indexes the controllers list by.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &twv1.BrowserWindow{}, WindowSessionIndex, func(o client.Object) []string {
		return []string{o.(*twv1.BrowserWindow).Spec.SessionRef.Name}
	}); err != nil {
		return err
	}
	return mgr.GetFieldIndexer().IndexField(ctx, &twv1.BrowserSession{}, SessionProfileIndex, func(o client.Object) []string {
		if p := o.(*twv1.BrowserSession).Status.ProfileName; p != "" {
			return []string{p}
		}
		return nil
	})
}

// sessionWindows lists the windows that name the session.
func sessionWindows(ctx context.Context, c client.Reader, s *twv1.BrowserSession) ([]twv1.BrowserWindow, error) {
	var list twv1.BrowserWindowList
	if err := c.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{WindowSessionIndex: s.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
