// Package controllers holds tabwarden's controller role: the BrowserSession
// reconciler (registration, spawn gating, status, lifecycle, finalizer GC) and
// the BrowserWindow registration reconciler.
package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
)

// WindowSessionIndex indexes BrowserWindows by spec.sessionRef.name.
const WindowSessionIndex = index.SessionRef

// SessionProfileIndex indexes BrowserSessions by status.profileName (their
// placement): the controller counts a profile's sessions from its own cache.
const SessionProfileIndex = index.SessionProfile

// SetupIndexes registers the field indexes the controllers list by.
func SetupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	return index.Setup(ctx, mgr.GetFieldIndexer(), index.WindowSessionRef, index.ActionSessionRef, index.SessionProfileName, index.SessionUnplaced)
}

// sessionWindows lists the windows that name the session.
func sessionWindows(ctx context.Context, c client.Reader, s *twv1.BrowserSession) ([]twv1.BrowserWindow, error) {
	var list twv1.BrowserWindowList
	if err := c.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingFields{WindowSessionIndex: s.Name}); err != nil {
		return nil, err
	}
	return list.Items, nil
}
