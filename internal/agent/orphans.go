package agent

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
)

// collectOrphans closes the pages the driver's ledger still holds as opened or
// spawned under a window that no longer exists, and drops bound records the same
// way (a bound tab is the user's: released, never closed). A window's page is
// normally closed by its finalizer; this catches a page whose window went
// without it (the agent was away when the controller let an untaken window go,
// or it stopped between a create and the record's window). The ledger proves
// the page is tabwarden's; the API server, asked directly, proves its window is
// gone: a record is written only after its window exists, so records read
// before the list cannot name a window the list does not show yet.
func (a *Agent) collectOrphans(ctx context.Context) error {
	if ready, _ := a.model.state(); !ready || !a.model.knowsRecords() {
		return nil
	}
	// One pass over the cache, read without copies, instead of a lookup per
	// record: the cost is the profile's windows once per heartbeat.
	var cached twv1.BrowserWindowList
	if err := a.client.List(ctx, &cached, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	known := make(map[string]bool, len(cached.Items))
	for i := range cached.Items {
		known[string(cached.Items[i].UID)] = true
	}
	var suspects []browser.Record
	for _, r := range a.model.recordList() {
		if !known[r.Key] {
			suspects = append(suspects, r)
		}
	}
	if len(suspects) == 0 {
		return nil
	}
	live, err := a.liveWindows(ctx, suspects)
	if err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	for _, r := range suspects {
		if live[r.Key] {
			continue
		}
		var err error
		if r.Kind == browser.RecordBound {
			err = a.opts.Browser.Release(ctx, browser.ReleaseRequest{Key: r.Key, ID: r.Page})
		} else {
			// Not knowing the window, close the page as a tab: the last-tab rule
			// leaves a blank tab rather than close a window that may be the user's.
			err = a.opts.Browser.Close(ctx, browser.CloseRequest{Key: r.Key, ID: r.Page})
		}
		if err != nil && !errors.Is(err, browser.ErrNotFound) {
			log.Error(err, "Collecting an orphaned page failed; retrying", "page", r.Page, "kind", r.Kind)
			continue
		}
		a.model.dropRecord(r.Key, r.Page)
		a.model.forgetOwner(r.Key)
		log.Info("Collected a page whose window is gone", "page", r.Page, "kind", r.Kind, "window", r.Key)
	}
	return nil
}

// orphanGets is how many suspects are asked about one by one (a GET each)
// before one LIST of the profile's windows is cheaper: at scale that list is
// every window of the profile, read and decoded whole.
const orphanGets = 32

// liveWindows reports which of the suspects' windows (by uid) exist, asking the
// API server directly: a GET by name for each suspect whose window the agent
// knows by name (a window of that name with another uid is another window, one
// labelled for another profile is not this agent's), or
// one LIST of the profile's windows when some is unknown by name or they are many.
func (a *Agent) liveWindows(ctx context.Context, suspects []browser.Record) (map[string]bool, error) {
	live := map[string]bool{}
	owners := make([]owner, 0, len(suspects))
	for _, r := range suspects {
		o, ok := a.model.knownOwner(r.Key)
		if !ok || len(suspects) > orphanGets {
			owners = nil
			break
		}
		owners = append(owners, o)
	}
	if owners != nil {
		for i, r := range suspects {
			w := &twv1.BrowserWindow{}
			err := a.reader.Get(ctx, client.ObjectKey{Namespace: owners[i].Namespace, Name: owners[i].Window}, w)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, err
			case string(w.UID) == r.Key && w.Labels[twv1.ProfileLabel] == a.opts.Profile:
				// As the LIST below would see it: labelled for this profile.
				live[r.Key] = true
			}
		}
		return live, nil
	}
	var list twv1.BrowserWindowList
	if err := a.reader.List(ctx, &list, client.MatchingLabels{twv1.ProfileLabel: a.opts.Profile}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		live[string(list.Items[i].UID)] = true
	}
	return live, nil
}
