// Package ops is what `kubectl tabwarden` and `tabwarden mcp` do against the API
// server, with the caller's identity: start a session, open a window, list what a
// session owns, acknowledge spawned windows, run a BrowserAction and wait for it,
// finish and clean up. Every refusal is an *Error carrying a stable reason, a
// message and a hint that is the corrected call.
package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Kind says how an operation ended when it did not succeed.
type Kind string

const (
	// Refused: a guard (or the API server's admission) refused the call; Reason is
	// a guard reason and Hint the corrected call.
	Refused Kind = "Refused"
	// Failed: the browser could not do what was asked (a BrowserAction Failed).
	Failed Kind = "Failed"
	// Invalid: the call itself is wrong (a missing window, a flag left out).
	Invalid Kind = "Invalid"
)

// Error is a refusal or failure a user or a model can act on.
type Error struct {
	Kind    Kind
	Reason  string
	Message string
	Hint    string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Reason != "" && e.Kind != Invalid:
		fmt.Fprintf(&b, "%s (%s): %s", strings.ToLower(string(e.Kind)), e.Reason, e.Message)
	default:
		b.WriteString(e.Message)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\nhint: %s", e.Hint)
	}
	return b.String()
}

// AsError returns err's *Error, if it has one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Ops runs operations in one namespace with one client (the caller's identity).
type Ops struct {
	Client    client.Client
	Namespace string
	// Command is how hints spell the CLI: "kubectl tabwarden" (the default).
	Command string
	// Poll is how often waits re-read an object (default 250ms).
	Poll time.Duration
}

func (o *Ops) cmd() string {
	if o.Command == "" {
		return "kubectl tabwarden"
	}
	return o.Command
}

func (o *Ops) nsFlag() string { return " -n " + o.Namespace }

func (o *Ops) poll() time.Duration {
	if o.Poll == 0 {
		return 250 * time.Millisecond
	}
	return o.Poll
}

// wait calls done every Poll until it reports true, returns an error, or ctx or
// timeout ends (then it returns errTimeout).
func (o *Ops) wait(ctx context.Context, timeout time.Duration, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(o.poll())
	defer t.Stop()
	for {
		ok, err := done(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return errTimeout
		case <-t.C:
		}
	}
}

var errTimeout = errors.New("timed out")

// GetSession reads a session; a missing one is an Invalid *Error that lists the
// namespace's sessions.
func (o *Ops) GetSession(ctx context.Context, name string) (*twv1.BrowserSession, error) {
	s := &twv1.BrowserSession{}
	err := o.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, &Error{Kind: Invalid, Reason: twv1.ReasonSessionUnregistered,
			Message: fmt.Sprintf("BrowserSession %q not found in namespace %q%s", name, o.Namespace, o.sessionNames(ctx)),
			Hint:    "kubectl get browsersessions" + o.nsFlag()}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (o *Ops) sessionNames(ctx context.Context) string {
	var list twv1.BrowserSessionList
	if err := o.Client.List(ctx, &list, client.InNamespace(o.Namespace)); err != nil || len(list.Items) == 0 {
		return " (it has none)"
	}
	names := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return " (it has: " + strings.Join(firstN(names, 8), ", ") + ")"
}

func firstN(s []string, n int) []string {
	sort.Strings(s)
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// SessionRequest is a session to start.
type SessionRequest struct {
	// Name of the session; empty generates one from the thread.
	Name string
	// Thread is who drives (required); Purpose why (required).
	Thread, Purpose string
	// Profile pins a BrowserProfile; Selector lets the controller pick one by labels.
	Profile  string
	Selector map[string]string
	// Placement is Window (the default) or Tab.
	Placement twv1.Placement
	// AbandonAfter is spec.abandonAfter: the session ends once its holder has
	// not renewed its Lease for this long. Zero: never.
	AbandonAfter time.Duration
}

// StartSession creates a BrowserSession and waits (up to timeout) until the
// controller registered and placed it. A session the controller refuses
// (profile_not_allowed, no matching profile) is returned with an *Error.
func (o *Ops) StartSession(ctx context.Context, req SessionRequest, timeout time.Duration) (*twv1.BrowserSession, error) {
	if strings.TrimSpace(req.Thread) == "" || strings.TrimSpace(req.Purpose) == "" {
		return nil, &Error{Kind: Invalid, Reason: twv1.ReasonSessionUnregistered,
			Message: "a session needs a thread (who drives) and a purpose (why)",
			Hint:    `start_session {"thread": "thread-42", "purpose": "file the 2026 tax return form", "profile": "local"}`}
	}
	s := &twv1.BrowserSession{
		// The controller's cleanup finalizer, set in the create: the
		// controller has nothing to add before it places the session.
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: req.Name, Finalizers: []string{twv1.SessionFinalizer}},
		Spec: twv1.BrowserSessionSpec{
			Thread: req.Thread, Purpose: req.Purpose, ProfileName: req.Profile, Placement: req.Placement,
		},
	}
	if req.Name == "" {
		s.GenerateName = dnsPrefix(req.Thread)
	}
	if req.AbandonAfter > 0 {
		s.Spec.AbandonAfter = &metav1.Duration{Duration: req.AbandonAfter}
	}
	if len(req.Selector) > 0 {
		s.Spec.ProfileSelector = &metav1.LabelSelector{MatchLabels: req.Selector}
	}
	if err := o.Client.Create(ctx, s); err != nil {
		return nil, o.apiError(err, "creating BrowserSession")
	}
	var last *metav1.Condition
	err := o.wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := o.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(s.Status.Conditions, twv1.RegisteredCondition)
		if c == nil || c.ObservedGeneration != s.Generation {
			return false, nil
		}
		last = c
		if c.Status == metav1.ConditionTrue {
			return true, nil
		}
		// profile_not_allowed does not resolve by waiting; NoProfile may (an agent connecting).
		return c.Reason == twv1.ReasonProfileNotAllowed, nil
	})
	if last != nil && last.Status != metav1.ConditionTrue {
		hint := o.cmd() + " profiles"
		if a := meta.FindStatusCondition(s.Status.Conditions, twv1.AdmittedCondition); a != nil && a.Status == metav1.ConditionFalse {
			hint = a.Message
		}
		return s, &Error{Kind: Refused, Reason: last.Reason, Message: fmt.Sprintf("session %s is not placed: %s", s.Name, last.Message), Hint: hint}
	}
	if errors.Is(err, errTimeout) {
		return s, &Error{Kind: Failed, Reason: "not_registered",
			Message: fmt.Sprintf("session %s was created but the controller did not register it within %s; is the tabwarden controller running?", s.Name, timeout),
			Hint:    "kubectl describe browsersession " + s.Name + o.nsFlag()}
	}
	return s, err
}

// dnsPrefix makes a GenerateName prefix out of free text.
func dnsPrefix(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	p := strings.Trim(b.String(), "-")
	if p == "" {
		p = "session"
	}
	return p + "-"
}

// apiError turns an API server refusal (validation, admission) into an *Error
// whose message is the server's, which already teaches the fix.
func (o *Ops) apiError(err error, doing string) error {
	switch {
	case apierrors.IsForbidden(err):
		// RBAC or an admission policy (a guard): the message says which and why.
		return &Error{Kind: Refused, Reason: "forbidden", Message: doing + ": " + err.Error()}
	case apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err), apierrors.IsBadRequest(err):
		return &Error{Kind: Invalid, Reason: strings.ToLower(string(apierrors.ReasonForError(err))), Message: doing + ": " + err.Error()}
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// OpenWindow creates an Open window for session and waits (up to timeout) until
// its page is open. A window the agent holds (unacknowledged_spawns,
// waiting_for_user, profile_not_allowed) comes back with an *Error: it stays
// and opens once the hold is lifted.
func (o *Ops) OpenWindow(ctx context.Context, session, name, url string, d twv1.Disposition, timeout time.Duration) (*twv1.BrowserWindow, error) {
	s, err := o.GetSession(ctx, session)
	if err != nil {
		return nil, err
	}
	if s.Ended() {
		return nil, &Error{Kind: Refused, Reason: twv1.ReasonSessionFinished,
			Message: fmt.Sprintf("session %s is finished; nothing new opens in it", session),
			Hint:    "start a new session"}
	}
	w := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: session}, Source: twv1.SourceOpen, URL: url, Disposition: d,
		},
	}
	if name == "" {
		w.GenerateName = session + "-"
	}
	// Registered in the create: labels, owner and, once the session is
	// placed, its profile and the page finalizer. The controller has nothing
	// to add, and the session's agent sees the window at once.
	w.Register(s, true)
	if err := o.Client.Create(ctx, w); err != nil {
		return nil, o.apiError(err, "creating BrowserWindow")
	}
	var held *metav1.Condition
	err = o.wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := o.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return false, err
		}
		if w.Status.Phase == twv1.WindowOpen {
			return true, nil
		}
		c := meta.FindStatusCondition(w.Status.Conditions, twv1.OpenedCondition)
		if c != nil && c.Status == metav1.ConditionFalse {
			switch c.Reason {
			case twv1.ReasonUnacknowledgedSpawns, twv1.ReasonWaitingForUser, twv1.ReasonProfileNotAllowed, twv1.ReasonOpenFailed:
				held = c
				return true, nil
			}
		}
		return false, nil
	})
	if held != nil {
		e := &Error{Kind: Refused, Reason: held.Reason, Message: fmt.Sprintf("window %s is held: %s", w.Name, held.Message)}
		switch held.Reason {
		case twv1.ReasonUnacknowledgedSpawns:
			e.Hint = fmt.Sprintf("%s ack --all-unacked %s close%s   (or keep them: ... keep); then window %s opens", o.cmd(), session, o.nsFlag(), w.Name)
		case twv1.ReasonOpenFailed:
			e.Kind = Failed
		}
		return w, e
	}
	if errors.Is(err, errTimeout) {
		return w, &Error{Kind: Failed, Reason: "not_opened",
			Message: fmt.Sprintf("window %s was created but its page did not open within %s; is the agent of the session's profile running?", w.Name, timeout),
			Hint:    o.cmd() + " profiles"}
	}
	return w, err
}

// Owned lists the windows of a session (opened, spawned, bound), sorted by
// source then name.
func (o *Ops) Owned(ctx context.Context, session string) (*twv1.BrowserSession, []twv1.BrowserWindow, error) {
	s, err := o.GetSession(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	var list twv1.BrowserWindowList
	if err := o.Client.List(ctx, &list, client.InNamespace(o.Namespace), client.MatchingLabels{twv1.SessionLabel: session}); err != nil {
		return nil, nil, err
	}
	// Windows the controller has not labelled yet still name the session.
	var all twv1.BrowserWindowList
	if err := o.Client.List(ctx, &all, client.InNamespace(o.Namespace)); err == nil {
		seen := map[string]bool{}
		for _, w := range list.Items {
			seen[w.Name] = true
		}
		for _, w := range all.Items {
			if !seen[w.Name] && w.Spec.SessionRef.Name == session {
				list.Items = append(list.Items, w)
			}
		}
	}
	ws := list.Items
	sort.SliceStable(ws, func(i, j int) bool {
		if a, b := sourceRank(ws[i].Spec.Source), sourceRank(ws[j].Spec.Source); a != b {
			return a < b
		}
		return ws[i].Name < ws[j].Name
	})
	return s, ws, nil
}

func sourceRank(s twv1.WindowSource) int {
	switch s {
	case twv1.SourceOpen:
		return 0
	case twv1.SourceSpawned:
		return 1
	}
	return 2
}

// ParseDisposition reads keep, close or temporary (any case).
func ParseDisposition(s string) (twv1.Disposition, error) {
	for _, d := range []twv1.Disposition{twv1.DispositionKeep, twv1.DispositionClose, twv1.DispositionTemporary} {
		if strings.EqualFold(s, string(d)) {
			return d, nil
		}
	}
	return "", &Error{Kind: Invalid, Message: fmt.Sprintf("disposition %q: want keep (leave it open, also after the session ends), close (close it now) or temporary (close it when the session ends)", s)}
}

// Ack gives each named window disposition d. A window that does not exist is
// an Invalid *Error naming the namespace's windows; none is patched then.
func (o *Ops) Ack(ctx context.Context, names []string, d twv1.Disposition) ([]twv1.BrowserWindow, error) {
	var ws []twv1.BrowserWindow
	for _, n := range names {
		w := twv1.BrowserWindow{}
		err := o.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: n}, &w)
		if apierrors.IsNotFound(err) {
			return nil, o.missingWindow(ctx, n)
		}
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	return o.patchDisposition(ctx, ws, d)
}

func (o *Ops) missingWindow(ctx context.Context, name string) error {
	e := &Error{Kind: Invalid, Reason: "window_not_found",
		Message: fmt.Sprintf("BrowserWindow %q not found in namespace %q", name, o.Namespace)}
	var list twv1.BrowserWindowList
	if err := o.Client.List(ctx, &list, client.InNamespace(o.Namespace)); err == nil {
		var unacked, sessions []string
		for _, w := range list.Items {
			if w.Unacknowledged() {
				unacked = append(unacked, w.Name)
			}
			if s := w.Spec.SessionRef.Name; !slices.Contains(sessions, s) {
				sessions = append(sessions, s)
			}
		}
		if len(unacked) > 0 {
			e.Message += "; its unacknowledged windows are: " + strings.Join(firstN(unacked, 8), ", ")
		}
		if len(sessions) == 1 {
			e.Hint = fmt.Sprintf("%s owned %s%s", o.cmd(), sessions[0], o.nsFlag())
			return e
		}
	}
	e.Hint = fmt.Sprintf("%s owned SESSION%s   (lists a session's windows; kubectl get browsersessions%s lists sessions)", o.cmd(), o.nsFlag(), o.nsFlag())
	return e
}

func (o *Ops) patchDisposition(ctx context.Context, ws []twv1.BrowserWindow, d twv1.Disposition) ([]twv1.BrowserWindow, error) {
	p := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"`+string(d)+`"}}`))
	for i := range ws {
		if err := o.Client.Patch(ctx, &ws[i], p); err != nil {
			if apierrors.IsNotFound(err) {
				continue // closed and gone meanwhile: nothing left to acknowledge
			}
			return ws[:i], o.apiError(err, "acknowledging BrowserWindow "+ws[i].Name)
		}
	}
	return ws, nil
}

// AckUnacked gives every unacknowledged spawned window of session disposition d.
func (o *Ops) AckUnacked(ctx context.Context, session string, d twv1.Disposition) ([]twv1.BrowserWindow, error) {
	_, ws, err := o.Owned(ctx, session)
	if err != nil {
		return nil, err
	}
	var unacked []twv1.BrowserWindow
	for _, w := range ws {
		if w.Unacknowledged() {
			unacked = append(unacked, w)
		}
	}
	return o.patchDisposition(ctx, unacked, d)
}

// Finish sets the session's state to Finished: the controller closes its
// temporary pages, releases Keep ones and detaches bound tabs.
func (o *Ops) Finish(ctx context.Context, session string) (*twv1.BrowserSession, error) {
	s, err := o.GetSession(ctx, session)
	if err != nil {
		return nil, err
	}
	p := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`))
	if err := o.Client.Patch(ctx, s, p); err != nil {
		return nil, o.apiError(err, "finishing BrowserSession "+session)
	}
	return s, nil
}

// CleanupPlan is what Cleanup closes: every owned (opened or spawned) window
// still open, Keep ones included; bound user tabs are never closed.
func CleanupPlan(ws []twv1.BrowserWindow) []twv1.BrowserWindow {
	var out []twv1.BrowserWindow
	for _, w := range ws {
		if w.Owned() && w.DeletionTimestamp.IsZero() && w.Spec.Disposition != twv1.DispositionClose &&
			w.Status.Phase != twv1.WindowClosed && w.Status.Phase != twv1.WindowGone {
			out = append(out, w)
		}
	}
	return out
}

// Cleanup gives every owned window of session disposition Close, closing their
// pages now, Keep deliverables included. Without yes it changes nothing and
// returns an Invalid *Error that lists what it would close and teaches --yes.
func (o *Ops) Cleanup(ctx context.Context, session string, yes bool) ([]twv1.BrowserWindow, error) {
	_, ws, err := o.Owned(ctx, session)
	if err != nil {
		return nil, err
	}
	plan := CleanupPlan(ws)
	if !yes {
		names := make([]string, 0, len(plan))
		for _, w := range plan {
			names = append(names, w.Name)
		}
		msg := fmt.Sprintf("cleanup closes every page session %s owns (%d: %s), Keep deliverables included; bound user tabs are left alone. Nothing was changed",
			session, len(plan), strings.Join(names, ", "))
		if len(plan) == 0 {
			msg = fmt.Sprintf("session %s owns no open page; nothing to close", session)
		}
		return plan, &Error{Kind: Invalid, Reason: "confirmation_required", Message: msg,
			Hint: fmt.Sprintf("%s cleanup %s --yes%s", o.cmd(), session, o.nsFlag())}
	}
	return o.patchDisposition(ctx, plan, twv1.DispositionClose)
}

// Profiles lists the BrowserProfiles (all, or those named).
func (o *Ops) Profiles(ctx context.Context, names ...string) ([]twv1.BrowserProfile, error) {
	var list twv1.BrowserProfileList
	if err := o.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return list.Items, nil
	}
	var out []twv1.BrowserProfile
	for _, n := range names {
		i := slices.IndexFunc(list.Items, func(p twv1.BrowserProfile) bool { return p.Name == n })
		if i < 0 {
			have := make([]string, 0, len(list.Items))
			for _, p := range list.Items {
				have = append(have, p.Name)
			}
			return nil, &Error{Kind: Invalid, Reason: "profile_not_found",
				Message: fmt.Sprintf("BrowserProfile %q not found (profiles: %s)", n, strings.Join(firstN(have, 8), ", ")),
				Hint:    o.cmd() + " profiles"}
		}
		out = append(out, list.Items[i])
	}
	return out, nil
}
