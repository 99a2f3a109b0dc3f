package up

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/controllers"
	"github.com/tabwarden/tabwarden/internal/agent"
	"github.com/tabwarden/tabwarden/internal/run"
)

// roleSet is the roles of one run, each in a goroutine on a context of their
// own, so that they stop before what they use.
type roleSet struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// exits receives each role's end: its name and error.
	exits chan roleExit
}

// roleExit is how one role ended.
type roleExit struct {
	name string
	err  error
}

func newRoleSet() *roleSet {
	ctx, cancel := context.WithCancel(context.Background())
	return &roleSet{ctx: ctx, cancel: cancel, exits: make(chan roleExit, 4)}
}

// start runs role name.
func (s *roleSet) start(name string, f func(context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.exits <- roleExit{name, f(s.ctx)}
	}()
}

// stop cancels the roles and waits for them, at most timeout.
func (s *roleSet) stop(timeout time.Duration, log logr.Logger) {
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		log.Info("Roles did not stop in time; stopping the rest anyway", "timeout", timeout)
	}
}

// startRoles starts the controller, the agent of profile local (cdp driver)
// and, with an extension host, the agent of the extension profile, each under
// its own identity.
func (r *runner) startRoles(context.Context) error {
	r.roles = newRoleSet()
	common := run.Common{SkipNameValidation: true}
	r.roles.start("controller", func(ctx context.Context) error {
		return run.Controller(ctx, r.controllerCfg, run.ControllerOptions{Common: common})
	})
	r.roles.start("agent "+r.o.LocalProfile, func(ctx context.Context) error {
		return run.Agent(ctx, r.localCfg, run.AgentOptions{Common: common, Options: agent.Options{
			Profile: r.o.LocalProfile, Driver: twv1.DriverCDP, Browser: r.cdpBrowser,
			Identity: "tabwarden-up/" + r.o.LocalProfile, LeaseNamespace: Namespace,
		}})
	})
	if r.host != nil {
		h := r.host
		r.info.ExtensionProfile, r.info.ExtensionAddr = r.o.ExtensionProfile, h.Addr()
		r.roles.start("agent "+r.o.ExtensionProfile, func(ctx context.Context) error {
			return run.Agent(ctx, r.extensionCfg, run.AgentOptions{Common: common, Options: agent.Options{
				Profile: r.o.ExtensionProfile, Driver: twv1.DriverExtension, Browser: h.Driver(),
				Identity: "tabwarden-up/" + r.o.ExtensionProfile, LeaseNamespace: Namespace,
			}})
		})
	}
	return nil
}

// waitUntilReady waits, at most Options.ReadyTimeout, until the local profile
// is connected by this run's agent and the extension profile registered; a
// role that ends first fails it.
func (r *runner) waitUntilReady(ctx context.Context) error {
	readyCtx, cancelReady := context.WithTimeout(ctx, r.o.ReadyTimeout)
	defer cancelReady()
	waitErr := make(chan error, 1)
	go func() { waitErr <- waitReady(readyCtx, r.k8s, r.o.LocalProfile, r.info.ExtensionProfile, r.began) }()
	select {
	case err := <-waitErr:
		if ctx.Err() != nil {
			return errStopped
		}
		if err != nil {
			return fmt.Errorf("waiting for profile %s to connect: %w", r.o.LocalProfile, err)
		}
		return nil
	case e := <-r.roles.exits:
		return roleFailed(e.name, e.err)
	}
}

// serve blocks until ctx ends (nil), a role ends, or the Chromium up launched
// exits (their errors).
func (r *runner) serve(ctx context.Context) error {
	select {
	case <-ctx.Done():
		r.progress("stopping (this takes a few seconds)")
		return nil
	case e := <-r.roles.exits:
		return roleFailed(e.name, e.err)
	case <-r.chromeExited:
		return fmt.Errorf("chromium exited (%v): its pages are gone and the pipe cannot be redialled; start tabwarden up again (the cluster is kept, and Open windows get their pages back)", r.chromeErr())
	}
}

// started lists the descendants of this process that are not in before.
func started(before []Proc) []Proc {
	var out []Proc
	for _, p := range Descendants(os.Getpid()) {
		if !slices.Contains(before, p) {
			out = append(out, p)
		}
	}
	return out
}

// roleFailed is the error of role name that ended with err (nil: unexpectedly).
func roleFailed(name string, err error) error {
	if err == nil {
		err = errors.New("stopped unexpectedly")
	}
	return fmt.Errorf("%s: %w", name, err)
}

// DesktopProfile is a profile of `tabwarden up`: it admits only SessionNamespace,
// so a session in any other namespace is refused (profile_not_allowed), and its
// url policy allows the loopback address the demo's site is served on.
func DesktopProfile(name string, driver twv1.DriverType) *twv1.BrowserProfile {
	return &twv1.BrowserProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: twv1.BrowserProfileSpec{Driver: driver, Namespaces: []string{SessionNamespace},
			// The demo's site is served on 127.0.0.1; every other private
			// destination stays refused (url_not_allowed).
			URLPolicy: &twv1.URLPolicy{AllowedHosts: []string{"127.0.0.1"}}},
	}
}

// ensureDesktopProfile creates a desktop profile before its agent starts (an
// agent registers a missing profile admitting no namespace); one that exists
// (kept from an earlier run) is left as the admin set it: up needs the profile
// to exist, and an admin's spec.namespaces or spec.urlPolicy are theirs to keep
// (`--fresh` starts again from up's defaults).
func ensureDesktopProfile(ctx context.Context, k8s client.Client, name string, driver twv1.DriverType) error {
	if err := k8s.Create(ctx, DesktopProfile(name, driver)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating BrowserProfile %s: %w", name, err)
	}
	return nil
}

// waitReady waits for profile local to be Connected by an agent of this run
// (its heartbeat Lease renewed since began: on a cluster kept from an earlier
// run, the profile's status says what the last run's agent wrote) and for
// profile ext to exist.
func waitReady(ctx context.Context, k8s client.Client, local, ext string, began time.Time) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last := "the profile is not registered yet"
	for {
		p := &twv1.BrowserProfile{}
		err := k8s.Get(ctx, client.ObjectKey{Name: local}, p)
		if err == nil && !renewedSince(ctx, k8s, local, began) {
			err, last = errNotYet, "the agent of this run has not renewed the profile's heartbeat yet"
		}
		switch {
		case errors.Is(err, errNotYet):
		case err == nil:
			c := meta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition)
			if c != nil && c.Status == metav1.ConditionTrue {
				if ext == "" {
					return nil
				}
				if err := k8s.Get(ctx, client.ObjectKey{Name: ext}, &twv1.BrowserProfile{}); err == nil {
					return nil
				}
				last = "profile " + ext + " is not registered yet"
			} else if c != nil {
				last = c.Reason + ": " + c.Message
			}
		case !apierrors.IsNotFound(err):
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%s)", ctx.Err(), last)
		case <-t.C:
		}
	}
}

var errNotYet = errors.New("not yet")

// renewedSince reports whether the heartbeat Lease of profile was renewed at or
// after since (the agent publishes the profile's status before it renews it).
func renewedSince(ctx context.Context, k8s client.Client, profile string, since time.Time) bool {
	l := &coordv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: controllers.LeasePrefix + profile}, l); err != nil {
		return false
	}
	return l.Spec.RenewTime != nil && !l.Spec.RenewTime.Time.Before(since.Truncate(time.Second))
}
