package agent

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/k8s/conditions"
	"github.com/tabwarden/tabwarden/internal/k8s/index"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
)

// profileLoop registers the agent's BrowserProfile and keeps it current: the
// Connected condition, browser version, the number of bindable tabs and a
// heartbeat Lease. It lists the bindable tabs themselves (urls and titles) in
// the BrowserTabList named after the profile that the controller creates in each
// namespace with a session placed on the profile and not ended.
type profileLoop struct {
	agent *Agent
	// informers, when set, wake the loop as soon as a session is placed on the
	// profile or ends, so that its namespace's tab list follows within a second.
	informers cache.Informers
	// published is the content of the tab list per namespace as last written (or
	// found by a resync); nil until the first resync.
	published map[string]tabListContent
	// resynced is when the tab lists were last listed from the API server.
	resynced time.Time
}

// tabListContent is what a BrowserTabList says; it is written only when it changes.
type tabListContent struct {
	count int32
	tabs  []twv1.BindableTab
}

func (c tabListContent) equal(o tabListContent) bool {
	return c.count == o.count && slices.Equal(c.tabs, o.tabs)
}

// tabListResync is how often the agent lists its tab lists from the API server,
// to remove one it no longer wants (left by an earlier run) and to rewrite one
// that someone changed or deleted.
const tabListResync = time.Minute

// NeedLeaderElection: every agent heartbeats its own profile.
func (pl *profileLoop) NeedLeaderElection() bool { return false }

// Start runs until ctx ends.
func (pl *profileLoop) Start(ctx context.Context) error {
	a := pl.agent
	log := ctrl.LoggerFrom(ctx).WithName("profile").WithValues("profile", a.opts.Profile)
	ctx = ctrl.LoggerInto(ctx, log)
	if pl.informers != nil {
		if err := pl.watchSessions(ctx); err != nil {
			return err
		}
	}
	tick := time.NewTicker(a.opts.Heartbeat)
	defer tick.Stop()
	full := true
	for {
		if err := pl.publish(ctx, full); err != nil && ctx.Err() == nil {
			log.Error(err, "Publishing profile status failed; retrying")
		}
		if err := pl.heartbeat(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Renewing the profile's heartbeat Lease failed; retrying")
		}
		if err := a.disposeEndedContexts(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Disposing the browser contexts of ended sessions failed; retrying")
		}
		// Orphans are rare (a window that went while the agent was away) and
		// looking for them costs a pass over every record: once per heartbeat,
		// not on every burst of page events.
		if full {
			if err := a.collectOrphans(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "Collecting pages whose window is gone failed; retrying")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			full = true
		case <-a.profileDirty:
			full = false
			// Coalesce bursts of page events into one status write.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// publish creates the profile when missing and writes what changed of its
// status. The tab count, informational (kubectl get browserprofiles -o wide),
// is refreshed only on a full publish (start, every heartbeat) or when the
// connection changes, so that a page opening or closing costs no profile write;
// the tab lists, which users bind from, follow every change.
func (pl *profileLoop) publish(ctx context.Context, full bool) error {
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
		return pl.publish(ctx, true)
	}
	if err != nil {
		return err
	}
	a.pool.Store(p.Spec.Pool)
	a.profileRead.Store(true) // windows held until now requeue themselves
	helper := patch.NewHelper(p, a.client)
	ready, epoch := a.model.state()
	a.metrics().DriverConnected(ready, a.paired())
	a.model.mu.RLock()
	version := a.model.version
	a.model.mu.RUnlock()
	p.Status.Agent = a.opts.Identity
	p.Status.ObservedGeneration = p.Generation
	var pages []bindablePage
	if ready {
		pages = bindablePages(a)
		if full || p.Status.Epoch != epoch || !apimeta.IsStatusConditionTrue(p.Status.Conditions, twv1.ConnectedCondition) {
			p.Status.TabCount = int32(len(pages))
		}
		p.Status.BrowserVersion, p.Status.Epoch = version, epoch
		setProfileCondition(p, twv1.ConnectedCondition, metav1.ConditionTrue, twv1.ReasonAgentConnected, "The agent reaches the browser")
		setProfileCondition(p, twv1.ReadyCondition, metav1.ConditionTrue, twv1.ReasonAgentConnected, "The agent reaches the browser")
	} else {
		setProfileCondition(p, twv1.ConnectedCondition, metav1.ConditionFalse, twv1.ReasonAgentDisconnected, "The agent does not reach the browser; its pages are Unknown, not closed")
		setProfileCondition(p, twv1.ReadyCondition, metav1.ConditionFalse, twv1.ReasonAgentDisconnected, "The agent does not reach the browser; its pages are Unknown, not closed")
	}
	// Read-only, from the cache's status.profileName index: no copy of every session.
	var sessions twv1.BrowserSessionList
	if err := a.client.List(ctx, &sessions, client.MatchingFields{index.SessionProfile: a.opts.Profile}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var n int32
	namespaces := map[string]bool{}
	for i := range sessions.Items {
		if s := &sessions.Items[i]; pl.placedHere(s) {
			n++
			namespaces[s.Namespace] = true
		}
	}
	p.Status.Sessions = n
	if err := helper.Patch(ctx, p); err != nil {
		return err
	}
	return pl.publishTabs(ctx, namespaces, pages, ready)
}

// placedHere reports whether a session is placed on this profile, not ended,
// and its namespace still admitted: its namespace may see the profile's tabs.
func (pl *profileLoop) placedHere(s *twv1.BrowserSession) bool {
	return s.Status.ProfileName == pl.agent.opts.Profile && !s.Ended() && !revoked(s)
}

// revoked reports whether the session's profile no longer admits its
// namespace (the controller's Admitted=False): it keeps what it has until it
// ends, but opens, binds and sees nothing new.
func revoked(s *twv1.BrowserSession) bool {
	return apimeta.IsStatusConditionFalse(s.Status.Conditions, twv1.AdmittedCondition)
}

// watchSessions wakes the loop when a session is placed on the profile or ends.
func (pl *profileLoop) watchSessions(ctx context.Context) error {
	inf, err := pl.informers.GetInformer(ctx, &twv1.BrowserSession{})
	if err != nil {
		return err
	}
	here := func(o any) bool {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		s, ok := o.(*twv1.BrowserSession)
		return ok && pl.placedHere(s)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if here(o) {
				pl.agent.markProfileDirty()
			}
		},
		UpdateFunc: func(o, n any) {
			if here(o) != here(n) {
				pl.agent.markProfileDirty()
			}
		},
		DeleteFunc: func(o any) {
			if here(o) {
				pl.agent.markProfileDirty()
			}
		},
	})
	return err
}

// publishTabs fills in the BrowserTabLists of the profile: in each of namespaces
// (the namespaces with a session placed on the profile), the tabs that namespace
// may bind. The controller creates and deletes the lists (the agent never does:
// config/admission/tablist.yaml); a list not created yet is written once it is.
// It writes only what changed. While the browser is unreachable (ready false)
// the tabs are unknown: the lists wait for the browser.
func (pl *profileLoop) publishTabs(ctx context.Context, namespaces map[string]bool, pages []bindablePage, ready bool) error {
	a := pl.agent
	if pl.published == nil || time.Since(pl.resynced) > tabListResync {
		if err := pl.resyncTabLists(ctx); err != nil {
			return err
		}
	}
	for ns := range pl.published {
		if !namespaces[ns] {
			delete(pl.published, ns) // the controller deletes it
		}
	}
	if !ready {
		return nil
	}
	var errs []error
	waiting := false
	for ns := range namespaces {
		want := tabsVisibleIn(ns, pages)
		if have, ok := pl.published[ns]; ok && have.equal(want) {
			continue
		}
		err := pl.writeTabList(ctx, ns, want)
		if apierrors.IsNotFound(err) {
			waiting = true // the controller has not created it yet
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pl.published[ns] = want
	}
	if waiting {
		time.AfterFunc(time.Second, a.markProfileDirty)
	}
	return kerrors.NewAggregate(errs)
}

// resyncTabLists reads the profile's tab lists from the API server: what is there
// is what the next publish compares against.
func (pl *profileLoop) resyncTabLists(ctx context.Context) error {
	a := pl.agent
	var list twv1.BrowserTabListList
	if err := a.reader.List(ctx, &list, client.MatchingLabels{twv1.ProfileLabel: a.opts.Profile}); err != nil {
		return err
	}
	pl.published = make(map[string]tabListContent, len(list.Items))
	for i := range list.Items {
		if tl := &list.Items[i]; tl.Name == a.opts.Profile {
			pl.published[tl.Namespace] = tabListContent{count: tl.TabCount, tabs: tl.Tabs}
		}
	}
	pl.resynced = time.Now()
	return nil
}

// writeTabList writes the namespace's tab list in one request: a merge patch of
// its whole content. It is NotFound until the controller created the list.
func (pl *profileLoop) writeTabList(ctx context.Context, ns string, c tabListContent) error {
	a := pl.agent
	tl := &twv1.BrowserTabList{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.opts.Profile}}
	body, err := json.Marshal(map[string]any{
		"tabCount": c.count,
		"tabs":     c.tabs, // null when empty: removes the field
	})
	if err != nil {
		return err
	}
	if err := a.client.Patch(ctx, tl, client.RawPatch(types.MergePatchType, body)); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Published the tab list", "namespace", ns, "tabs", c.count)
	return nil
}

func setProfileCondition(p *twv1.BrowserProfile, typ string, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(p, typ, status, reason, msg)
}

// bindablePage is a page a session may bind: a user's page.
type bindablePage struct {
	browser.Page
}

// bindablePages lists the pages a session may bind, by id: never browser or
// extension pages, and never a page recorded in the driver's ledger (opened,
// spawned or bound by a window: binding it would be refused, tab_in_use) nor
// one spawned by an owned page or an action and not adopted yet (a tab the user
// opened from a bound tab is theirs, and listed). So a session's own pages
// coming and going never rewrite a tab list.
func bindablePages(a *Agent) []bindablePage {
	var pages []bindablePage
	for _, p := range a.model.all() {
		if !Bindable(p.URL) {
			continue
		}
		if _, recorded := a.model.record(p.ID); recorded {
			continue
		}
		if r, fromRecorded := a.model.record(p.OpenerID); p.OpenerID != "" && fromRecorded && r.Owned() {
			continue
		}
		if p.Attributed != "" {
			continue // appeared during an action: that session's once adopted
		}
		pages = append(pages, bindablePage{Page: p})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	return pages
}

// tabsVisibleIn is the tab list of namespace ns: the user's bindable pages; on
// a pool profile only those of the default browser context and of ns's
// sessions' contexts (named <namespace>/<session>). At most
// twv1.MaxBindableTabs of them, with the full count.
func tabsVisibleIn(ns string, pages []bindablePage) tabListContent {
	var c tabListContent
	for _, p := range pages {
		if p.Context != "" && !strings.HasPrefix(p.Context, ns+"/") {
			continue
		}
		c.count++
		if len(c.tabs) < twv1.MaxBindableTabs {
			c.tabs = append(c.tabs, twv1.BindableTab{ID: p.ID, WindowID: p.WindowID, Title: truncate(p.Title, 512), URL: truncate(p.URL, 4096)})
		}
	}
	return c
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
