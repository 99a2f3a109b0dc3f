package ops

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// HolderIdentity names this process as a session's holder: the tool, the
// host and the process id, e.g. "tabwarden mcp laptop/4242".
func HolderIdentity(tool string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host" // a name for people to read; the Lease works without it
	}
	return fmt.Sprintf("%s %s/%d", tool, host, os.Getpid())
}

// RenewInterval is how often a holder renews a session's Lease: a third of
// spec.abandonAfter (two renewals may fail before the session is abandoned),
// between one second and five minutes; five minutes without abandonAfter.
func RenewInterval(s *twv1.BrowserSession) time.Duration {
	if s.Spec.AbandonAfter == nil || s.Spec.AbandonAfter.Duration <= 0 {
		return 5 * time.Minute
	}
	return min(max(s.Spec.AbandonAfter.Duration/3, time.Second), 5*time.Minute)
}

// Hold holds session as identity: it renews the session's holder Lease (named
// after the session, in its namespace, labelled tabwarden.dev/session, owned by
// the session so that it goes with it) every RenewInterval until ctx ends or
// the session ends or goes, then returns nil. It never releases the Lease: a
// holder that stops is what abandonment is. renewed, if not nil, is called
// after each renewal. A client that holds a session already is replaced.
func (o *Ops) Hold(ctx context.Context, session, identity string, renewed func(*coordv1.Lease)) error {
	s, err := o.GetSession(ctx, session)
	if err != nil {
		return err
	}
	for {
		if s.Ended() {
			return nil
		}
		l, err := o.renew(ctx, s, identity)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err):
			// A conflict is another renewal racing this one: the next one wins.
			return o.apiError(err, "renewing the holder Lease of BrowserSession "+session)
		case err == nil && renewed != nil:
			renewed(l)
		}
		t := time.NewTimer(RenewInterval(s))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if err := o.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			if apierrors.IsNotFound(err) || ctx.Err() != nil {
				return nil
			}
			return o.apiError(err, "reading BrowserSession "+session)
		}
	}
}

// renew writes the session's holder Lease: created on first hold, renewed (and
// taken over from another holder, or from an earlier session of the same name)
// after.
func (o *Ops) renew(ctx context.Context, s *twv1.BrowserSession, identity string) (*coordv1.Lease, error) {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(RenewInterval(s).Seconds() * 3)
	if s.Spec.AbandonAfter != nil && s.Spec.AbandonAfter.Duration > 0 {
		secs = int32(max(s.Spec.AbandonAfter.Seconds(), 1))
	}
	owner := metav1.OwnerReference{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserSession", Name: s.Name, UID: s.UID}
	l := &coordv1.Lease{}
	err := o.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, l)
	if apierrors.IsNotFound(err) {
		l = &coordv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name,
				Labels:          map[string]string{twv1.SessionLabel: s.Name},
				OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: coordv1.LeaseSpec{HolderIdentity: ptr.To(identity), LeaseDurationSeconds: ptr.To(secs), AcquireTime: &now, RenewTime: &now},
		}
		return l, o.Client.Create(ctx, l)
	}
	if err != nil {
		return nil, err
	}
	if ptr.Deref(l.Spec.HolderIdentity, "") != identity {
		l.Spec.AcquireTime = &now
		l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[twv1.SessionLabel] = s.Name
	l.OwnerReferences = []metav1.OwnerReference{owner}
	l.Spec.HolderIdentity = ptr.To(identity)
	l.Spec.LeaseDurationSeconds = ptr.To(secs)
	l.Spec.RenewTime = &now
	return l, o.Client.Update(ctx, l)
}

// HolderLease reads the session's holder Lease; nil when nobody holds it.
func (o *Ops) HolderLease(ctx context.Context, s *twv1.BrowserSession) *coordv1.Lease {
	l := &coordv1.Lease{}
	if err := o.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Name}, l); err != nil {
		return nil // not held, or not readable by this user: the status mirror still says
	}
	if l.Labels[twv1.SessionLabel] != s.Name {
		return nil
	}
	for _, r := range l.OwnerReferences {
		if r.UID == s.UID {
			return l
		}
	}
	return nil
}

// Reprimand is what a session left behind when it was finished: the spawned
// windows nobody acknowledged and the pages it still owned open (Keep
// deliverables aside). Empty when the session was clean.
type Reprimand struct {
	Session    string
	Namespace  string
	Unacked    []string
	OpenPages  []string
	commandFor string
}

// Dirty reports whether the session left anything behind.
func (r Reprimand) Dirty() bool { return len(r.Unacked)+len(r.OpenPages) > 0 }

// String is the reprimand, reason first (dirty_session), with what to do
// next time as commands (kubectl, the CLI).
func (r Reprimand) String() string {
	return r.With(fmt.Sprintf("acknowledge what your pages spawn (%s) and close the pages you are done with (%s cleanup %s --yes -n %s, or disposition close); keep deliverables with disposition keep",
		hint.Ack(r.Namespace, "WINDOW", twv1.DispositionClose), r.commandFor, r.Session, r.Namespace))
}

// With is the reprimand, reason first (dirty_session), with advice (what to
// do next time, in the caller's own terms: commands, or tool calls).
func (r Reprimand) With(advice string) string {
	if !r.Dirty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: session %s was finished dirty; tabwarden closes what it left behind.", twv1.ReasonDirtySession, r.Session)
	if len(r.OpenPages) > 0 {
		fmt.Fprintf(&b, " Pages still open (%d): %s.", len(r.OpenPages), strings.Join(r.OpenPages, ", "))
	}
	if len(r.Unacked) > 0 {
		fmt.Fprintf(&b, " Spawned windows never acknowledged (%d): %s.", len(r.Unacked), strings.Join(r.Unacked, ", "))
	}
	fmt.Fprintf(&b, " Next time, before finishing: %s.", advice)
	return b.String()
}

// FinishWithReprimand finishes the session like Finish and says what it left
// behind at that moment (see Reprimand).
func (o *Ops) FinishWithReprimand(ctx context.Context, session string) (*twv1.BrowserSession, Reprimand, error) {
	r := Reprimand{Session: session, Namespace: o.Namespace, commandFor: o.cmd()}
	s, ws, err := o.Owned(ctx, session)
	if err != nil {
		return nil, r, err
	}
	if !s.Ended() {
		r.left(ws)
	}
	s, err = o.Finish(ctx, session)
	return s, r, err
}

// left records what windows ws, the session's, leave behind: spawned windows
// with no disposition, and pages it owns open (Keep aside).
func (r *Reprimand) left(ws []twv1.BrowserWindow) {
	for i := range ws {
		w := &ws[i]
		switch {
		case w.Unacknowledged():
			// A spawn the agent adopted a moment ago has no phase yet:
			// its page is open all the same.
			r.Unacked = append(r.Unacked, w.Name)
		case w.Owned() && w.Spec.Disposition != twv1.DispositionKeep && w.Live():
			r.OpenPages = append(r.OpenPages, w.Name)
		}
	}
	sort.Strings(r.Unacked)
	sort.Strings(r.OpenPages)
}
