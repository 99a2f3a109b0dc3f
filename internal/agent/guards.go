package agent

import (
	"fmt"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser/keys"
)

// Coverage says whether a guard applies to a step type and, when it does not,
// why not.
type Coverage struct {
	Applies bool
	Why     string
}

func applies(why string) Coverage { return Coverage{Applies: true, Why: why} }
func na(why string) Coverage      { return Coverage{Why: why} }

// all classifies every step type alike.
func all(c Coverage) map[twv1.StepType]Coverage {
	m := map[twv1.StepType]Coverage{}
	for _, t := range []twv1.StepType{twv1.StepObserve, twv1.StepNavigate, twv1.StepClick, twv1.StepTypeText, twv1.StepPress, twv1.StepScroll, twv1.StepWait} {
		m[t] = c
	}
	return m
}

// GuardCoverage classifies every step type against every guard of the contract's (docs/contract.md)
// guard table (twv1.Guards). The guard coverage test fails when a step type or a
// guard is missing here, and runs every pair against the real system: a step a
// guard applies to is refused (or warned) in the guard's situation, any other
// step is not.
var GuardCoverage = map[string]map[twv1.StepType]Coverage{
	twv1.ReasonSessionUnregistered: all(applies("an action whose session does not exist is refused by the controller before any step runs")),
	twv1.ReasonUnacknowledgedSpawns: {
		twv1.StepObserve:  na("reads the page; it cannot spawn and changes nothing"),
		twv1.StepNavigate: applies("changes the page"),
		twv1.StepClick:    applies("changes the page and may spawn more"),
		twv1.StepTypeText: applies("changes the page (and Enter may submit a form that spawns)"),
		twv1.StepPress:    applies("changes the page"),
		twv1.StepScroll:   na("moves the viewport only; it cannot spawn"),
		twv1.StepWait:     na("reads the page only"),
	},
	twv1.ReasonDirtySession: all(na("not a refusal: a reprimand condition on a session that ended with pages open; actions on an ended session are refused as session_finished")),
	twv1.ReasonStaleCoordinates: {
		twv1.StepObserve:  na("takes no target"),
		twv1.StepNavigate: na("takes no target"),
		twv1.StepClick:    applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepTypeText: applies("a point target is checked against its observation's document and render epoch"),
		twv1.StepPress:    na("takes no target; it goes to the focused element"),
		twv1.StepScroll:   na("takes no target"),
		twv1.StepWait:     na("takes no target"),
	},
	twv1.ReasonAmbiguousTarget: {
		twv1.StepObserve:  na("takes no target"),
		twv1.StepNavigate: na("takes no target"),
		twv1.StepClick:    applies("a text target must match one visible element"),
		twv1.StepTypeText: applies("a text target must match one visible element"),
		twv1.StepPress:    na("takes no target"),
		twv1.StepScroll:   na("takes no target"),
		twv1.StepWait:     na("waits for text anywhere on the page; any match will do"),
	},
	twv1.ReasonProfileMismatch:             all(applies("an action naming another profile than the session's is refused before any step runs")),
	twv1.ReasonNoKeepalive:                 all(applies("a warning on any step of a session driven long on a host that ends idle connections, without keepalive")),
	twv1.ReasonSessionOwnedByAnotherThread: all(applies("an action from another thread than the session's is refused before any step runs")),
	twv1.ReasonWaitingForUser: {
		twv1.StepObserve:  na("reads the page; the user's work is not disturbed"),
		twv1.StepNavigate: applies("would change the page under the user"),
		twv1.StepClick:    applies("would change the page under the user"),
		twv1.StepTypeText: applies("would change the page under the user"),
		twv1.StepPress:    applies("would change the page under the user"),
		twv1.StepScroll:   applies("would move the page under the user"),
		twv1.StepWait:     na("reads the page only"),
	},
	twv1.ReasonFocusViolation: {
		twv1.StepObserve:  na("the driver reads the page without focusing it"),
		twv1.StepNavigate: na("the driver navigates the tab without activating it"),
		twv1.StepClick:    na("the driver sends input to the background tab without activating it"),
		twv1.StepTypeText: na("the driver inserts text without activating the tab"),
		twv1.StepPress:    applies("browser shortcuts (Control+T, Control+Tab, Alt+F4, F6...) would open, switch or focus tabs and windows"),
		twv1.StepScroll:   na("the driver scrolls without focusing"),
		twv1.StepWait:     na("reads the page only"),
	},
}

// focusShortcut reports whether key (e.g. "Control+Shift+T", "Mod+t", "F6") is
// a browser shortcut that opens, closes, switches or focuses a tab or window:
// read by internal/browser/keys, as every driver reads it.
func focusShortcut(key string) bool { return keys.FocusShortcut(key) }

// refusal is a guard's answer: a stable reason, what happened, and the
// corrected call.
type refusal struct {
	reason, message, hint string
	candidates            []twv1.ObservedElement
}

func (r *refusal) Error() string { return r.reason + ": " + r.message }

func refuse(reason, hint, format string, args ...any) *refusal {
	return &refusal{reason: reason, message: fmt.Sprintf(format, args...), hint: hint}
}
