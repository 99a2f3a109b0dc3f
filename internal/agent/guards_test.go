package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestFocusShortcut(t *testing.T) {
	for key, want := range map[string]bool{
		"Enter": false, "Tab": false, "Escape": false, "a": false, "Shift+Tab": false, "Control+a": false, "Control+c": false,
		"ArrowDown": false, "Backspace": false,
		"Control+t": true, "Control+T": true, "Control+Shift+T": true, "Ctrl+Tab": true, "Control+Shift+Tab": true,
		"Control+w": true, "Control+n": true, "Control+1": true, "Control+PageDown": true, "Meta+t": true, "Cmd+`": true,
		"Alt+Tab": true, "Alt+F4": true, "Alt+ArrowLeft": true, "F6": true, "F11": true,
		// However the shortcut is spelled (issue 19: Mod+t passed the guard).
		"Mod+t": true, "mod+T": true, "Mod+Shift+Tab": true, "Mod+w": true, "CTRL+t": true, "control+w": true,
		"Option+Tab": true, "Command+t": true, "Mod+c": false, "Mod+a": false,
	} {
		if got := focusShortcut(key); got != want {
			t.Errorf("focusShortcut(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestObservationsBindRefs(t *testing.T) {
	tab := newObservations()
	id := tab.add(observation{session: "s1", sessionGeneration: 3, page: "p1", document: "d1", epoch: 7})
	other := tab.add(observation{session: "s1", sessionGeneration: 3, page: "p1", document: "d2", epoch: 0})
	if id == other {
		t.Fatalf("two observations share id %s", id)
	}
	for _, tc := range []struct {
		name       string
		ref, obs   string
		point      bool
		session    types.UID
		generation int64
		page       string
		reason     string
	}{
		{name: "ref of this session, page and generation", ref: id + ".e4", session: "s1", generation: 3, page: "p1"},
		{name: "point", obs: id, point: true, session: "s1", generation: 3, page: "p1"},
		{name: "another session", ref: id + ".e4", session: "s2", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "another page", ref: id + ".e4", session: "s1", generation: 3, page: "p2", reason: "stale_ref"},
		{name: "the session changed (waited for the user)", ref: id + ".e4", session: "s1", generation: 4, page: "p1", reason: "stale_ref"},
		{name: "unknown observation (before a restart)", ref: "o1.e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
		{name: "point of another session", obs: id, point: true, session: "s2", generation: 3, page: "p1", reason: "stale_coordinates"},
		{name: "malformed ref", ref: "e4", session: "s1", generation: 3, page: "p1", reason: "stale_ref"},
	} {
		tg, reason, msg := tab.resolve(tc.ref, tc.obs, tc.point, 10, 20, tc.session, tc.generation, tc.page)
		if reason != tc.reason {
			t.Errorf("%s: reason %q (%s), want %q", tc.name, reason, msg, tc.reason)
			continue
		}
		if reason == "" && tc.point && (tg.Document != "d1" || tg.Epoch != 7 || !tg.Point || tg.X != 10) {
			t.Errorf("%s: target %+v carries the observation's document and epoch", tc.name, tg)
		}
		if reason == "" && !tc.point && (tg.Document != "d1" || tg.Ref != "e4") {
			t.Errorf("%s: target %+v names the element in the observation's document", tc.name, tg)
		}
	}
	// A restarted agent never reuses an id.
	if again := newObservations().add(observation{}); again <= id && len(again) == len(id) {
		t.Errorf("a new table issued %s after %s", again, id)
	}
	tab.forgetSession("s1")
	if _, ok := tab.get(id); ok {
		t.Error("forgetSession kept an observation of the session")
	}
}
