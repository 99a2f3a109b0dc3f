package agent

import (
	"context"
	"sort"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/patch"
)

// profileLoop registers the agent's BrowserProfile and keeps it current: the
// Connected condition, browser version, the bindable tabs and a heartbeat Lease.
type profileLoop struct {
	agent *Agent
}

// NeedLeaderElection: every agent heartbeats its own profile.
func (pl *profileLoop) NeedLeaderElection() bool { return false }

// Start runs until ctx ends.
func (pl *profileLoop) Start(ctx context.Context) error {
	a := pl.agent
	log := ctrl.LoggerFrom(ctx).WithName("profile").WithValues("profile", a.opts.Profile)
	ctx = ctrl.LoggerInto(ctx, log)
	tick := time.NewTicker(a.opts.Heartbeat)
	defer tick.Stop()
	for {
		if err := pl.publish(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Publishing profile status failed; retrying")
		}
		if err := pl.heartbeat(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Renewing the profile's heartbeat Lease failed; retrying")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-a.profileDirty:
			// Coalesce bursts of page events into one status write.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// publish creates the profile when missing and writes what changed of its status.
func (pl *profileLoop) publish(ctx context.Context) error {
	a := pl.agent
	p := &twv1.BrowserProfile{}
	err := a.reader.Get(ctx, client.ObjectKey{Name: a.opts.Profile}, p)
	if apierrors.IsNotFound(err) {
		p.Name = a.opts.Profile
		p.Spec.Driver = a.opts.Driver
		if err := a.client.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Registered browser profile")
		return pl.publish(ctx)
	}
	if err != nil {
		return err
	}
	a.pool.Store(p.Spec.Pool)
	helper := patch.NewHelper(p, a.client)
	ready, epoch := a.model.state()
	a.model.mu.RLock()
	version := a.model.version
	a.model.mu.RUnlock()
	p.Status.Agent = a.opts.Identity
	if ready {
		p.Status.BrowserVersion, p.Status.Epoch = version, epoch
		setProfileCondition(p, twv1.ConnectedCondition, metav1.ConditionTrue, twv1.ReasonAgentConnected, "The agent reaches the browser")
		p.Status.Tabs = bindableTabs(a)
	} else {
		setProfileCondition(p, twv1.ConnectedCondition, metav1.ConditionFalse, twv1.ReasonAgentDisconnected, "The agent does not reach the browser; its pages are Unknown, not closed")
	}
	var sessions twv1.BrowserSessionList
	if err := a.client.List(ctx, &sessions); err != nil {
		return err
	}
	var n int32
	for i := range sessions.Items {
		if s := &sessions.Items[i]; s.Status.ProfileName == a.opts.Profile && !s.Ended() {
			n++
		}
	}
	p.Status.Sessions = n
	return helper.Patch(ctx, p)
}

func setProfileCondition(p *twv1.BrowserProfile, typ string, status metav1.ConditionStatus, reason, msg string) {
	conds := p.Status.Conditions
	setConds(&conds, typ, status, reason, msg, p.Generation)
	p.Status.Conditions = conds
}

// bindableTabs lists the pages a session may bind: never browser or extension pages.
func bindableTabs(a *Agent) []twv1.ProfileTab {
	var tabs []twv1.ProfileTab
	for _, p := range a.model.all() {
		if !Bindable(p.URL) {
			continue
		}
		tabs = append(tabs, twv1.ProfileTab{ID: p.ID, WindowID: p.WindowID, Title: truncate(p.Title, 512), URL: truncate(p.URL, 4096)})
	}
	sort.Slice(tabs, func(i, j int) bool { return tabs[i].ID < tabs[j].ID })
	if len(tabs) > 500 {
		tabs = tabs[:500]
	}
	return tabs
}

// Bindable reports whether a page with this url may be listed for binding.
func Bindable(url string) bool {
	for _, prefix := range []string{"chrome://", "chrome-extension://", "devtools://", "chrome-untrusted://", "edge://", "view-source:"} {
		if strings.HasPrefix(url, prefix) {
			return false
		}
	}
	return true
}

// heartbeat renews the profile's Lease, like a node's.
func (pl *profileLoop) heartbeat(ctx context.Context) error {
	a := pl.agent
	if a.opts.LeaseNamespace == "" {
		return nil
	}
	name := "tabwarden-profile-" + a.opts.Profile
	now := metav1.NewMicroTime(time.Now())
	secs := int32(3 * a.opts.Heartbeat / time.Second)
	l := &coordv1.Lease{}
	err := a.reader.Get(ctx, client.ObjectKey{Namespace: a.opts.LeaseNamespace, Name: name}, l)
	if apierrors.IsNotFound(err) {
		l.Namespace, l.Name = a.opts.LeaseNamespace, name
		l.Spec = coordv1.LeaseSpec{HolderIdentity: &a.opts.Identity, LeaseDurationSeconds: &secs, RenewTime: &now}
		return client.IgnoreAlreadyExists(a.client.Create(ctx, l))
	}
	if err != nil {
		return err
	}
	before := l.DeepCopy()
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &a.opts.Identity, &secs, &now
	return a.client.Patch(ctx, l, client.MergeFrom(before))
}
