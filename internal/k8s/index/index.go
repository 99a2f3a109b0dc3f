// Package index holds the cache field indexes both roles list by, each written
// once: the controller and the agent register the ones they need.
package index

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Field names.
const (
	// SessionRef indexes BrowserWindows and BrowserActions by spec.sessionRef.name.
	SessionRef = twv1.SessionRefIndex
	// SessionProfile indexes BrowserSessions by status.profileName (their placement).
	SessionProfile = "status.profileName"
	// Unplaced indexes BrowserSessions waiting for placement: "pinned/<profile>"
	// for a session pinned by spec.profileName, "selector" for one placed by
	// spec.profileSelector. A profile event looks up only these, never every session.
	Unplaced = "status.unplaced"
)

// Index is one field index of one kind.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

var (
	// WindowSessionRef indexes windows by their session.
	WindowSessionRef = Index{&twv1.BrowserWindow{}, SessionRef, func(o client.Object) []string {
		return []string{o.(*twv1.BrowserWindow).Spec.SessionRef.Name}
	}}
	// ActionSessionRef indexes actions by their session.
	ActionSessionRef = Index{&twv1.BrowserAction{}, SessionRef, func(o client.Object) []string {
		return []string{o.(*twv1.BrowserAction).Spec.SessionRef.Name}
	}}
	// SessionProfileName indexes placed sessions by their profile.
	SessionProfileName = Index{&twv1.BrowserSession{}, SessionProfile, func(o client.Object) []string {
		if p := o.(*twv1.BrowserSession).Status.ProfileName; p != "" {
			return []string{p}
		}
		return nil
	}}
	// SessionUnplaced indexes the sessions that wait for placement (Unplaced).
	SessionUnplaced = Index{&twv1.BrowserSession{}, Unplaced, func(o client.Object) []string {
		s := o.(*twv1.BrowserSession)
		switch {
		case s.Status.ProfileName != "":
			return nil
		case s.Spec.ProfileName != "":
			return []string{UnplacedPinned(s.Spec.ProfileName)}
		case s.Spec.ProfileSelector != nil:
			return []string{UnplacedSelector}
		}
		return nil
	}}
)

// UnplacedSelector is the Unplaced value of sessions placed by selector.
const UnplacedSelector = "selector"

// UnplacedPinned is the Unplaced value of sessions pinned to profile.
func UnplacedPinned(profile string) string { return "pinned/" + profile }

// Setup registers indexes with a manager's field indexer.
func Setup(ctx context.Context, fi client.FieldIndexer, indexes ...Index) error {
	for _, i := range indexes {
		if err := fi.IndexField(ctx, i.Object, i.Field, i.Extract); err != nil {
			return err
		}
	}
	return nil
}

// SlimAction is a cache transform that keeps of a BrowserAction what the roles
// decide by (spec, phase, profile, completion time) and drops its results
// (observations of up to 500 elements, step results), which only readers of the
// API need: a cache of many actions stays small.
func SlimAction(o any) (any, error) {
	if a, ok := o.(*twv1.BrowserAction); ok {
		a.Status.Steps, a.Status.Observation, a.Status.Spawned, a.Status.Warnings = nil, nil, nil, nil
		a.Status.Message, a.Status.Hint = "", ""
		a.ManagedFields = nil
	}
	return Intern(o)
}

// StripAndIntern is the roles' default cache transform: managedFields dropped
// (nothing here reads them: tabwarden writes merge patches, never server-side
// apply), then Intern.
func StripAndIntern(o any) (any, error) {
	if m, ok := o.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}); ok {
		m.SetManagedFields(nil)
	}
	return Intern(o)
}
