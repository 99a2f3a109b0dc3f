package patch_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/patch"
	"github.com/tabwarden/tabwarden/internal/run"
)

// TestRemoveFinalizer: the removal tests the finalizer list, not the
// resourceVersion. A status written after the caller's read is no conflict,
// a finalizer list changed after it is (and nothing is written), a deleted
// object goes with its last finalizer, and one already gone is a 404.
func TestRemoveFinalizer(t *testing.T) {
	const other = "example.com/someone-else"
	cases := []struct {
		name string
		// meanwhile runs between the caller's read and its removal.
		// adm is the admin, ctl the controller (the only writer of a
		// session's status).
		meanwhile func(g *WithT, adm, ctl client.Client, s *twv1.BrowserSession)
		delete    bool
		// check asserts on the error and the object's state afterwards.
		check func(g *WithT, err error, got *twv1.BrowserSession, getErr error)
		sent  []string
	}{{
		name: "a status written after the read is no conflict",
		meanwhile: func(g *WithT, _, ctl client.Client, s *twv1.BrowserSession) {
			fresh := s.DeepCopy()
			fresh.Status.Phase = twv1.SessionPhaseActive
			g.Expect(ctl.Status().Update(context.Background(), fresh)).To(Succeed())
		},
		check: func(g *WithT, err error, got *twv1.BrowserSession, getErr error) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(getErr).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(BeEmpty())
			g.Expect(got.Status.Phase).To(Equal(twv1.SessionPhaseActive), "the other writer's status stays")
		},
		sent: []string{"PATCH browsersessions/s"},
	}, {
		name: "a finalizer added after the read is a refusal and nothing is written",
		meanwhile: func(g *WithT, adm, _ client.Client, s *twv1.BrowserSession) {
			fresh := s.DeepCopy()
			fresh.Finalizers = append(fresh.Finalizers, other)
			g.Expect(adm.Update(context.Background(), fresh)).To(Succeed())
		},
		check: func(g *WithT, err error, got *twv1.BrowserSession, getErr error) {
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the test op fails: %v", err)
			g.Expect(err.Error()).To(ContainSubstring("removing finalizer " + twv1.SessionFinalizer))
			g.Expect(getErr).NotTo(HaveOccurred())
			g.Expect(got.Finalizers).To(ConsistOf(twv1.SessionFinalizer, other))
		},
		sent: []string{"PATCH browsersessions/s"},
	}, {
		name:   "a deleted object goes with its last finalizer",
		delete: true,
		check: func(g *WithT, err error, _ *twv1.BrowserSession, getErr error) {
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(apierrors.IsNotFound(getErr)).To(BeTrue(), "the object is gone: %v", getErr)
		},
		sent: []string{"PATCH browsersessions/s"},
	}, {
		name:   "an object already gone is a 404",
		delete: true,
		meanwhile: func(g *WithT, adm, _ client.Client, s *twv1.BrowserSession) {
			fresh := s.DeepCopy()
			fresh.Finalizers = nil
			g.Expect(adm.Update(context.Background(), fresh)).To(Succeed())
		},
		check: func(g *WithT, err error, _ *twv1.BrowserSession, getErr error) {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
			g.Expect(apierrors.IsNotFound(getErr)).To(BeTrue())
		},
		sent: []string{"PATCH browsersessions/s"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			rec := &recorder{}
			c := controllerClient(t, rec)
			adm, err := client.New(admin, client.Options{Scheme: run.Scheme()})
			g.Expect(err).NotTo(HaveOccurred())
			s := newSession(t, g)
			s.Finalizers = []string{twv1.SessionFinalizer}
			g.Expect(adm.Update(ctx, s)).To(Succeed())
			t.Cleanup(func() { // the namespace's deletion waits for no finalizer
				left := &twv1.BrowserSession{}
				if adm.Get(ctx, client.ObjectKeyFromObject(s), left) == nil {
					left.Finalizers = nil
					_ = adm.Update(ctx, left)
				}
			})
			if tc.delete {
				g.Expect(adm.Delete(ctx, s)).To(Succeed())
			}
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
			if tc.meanwhile != nil {
				tc.meanwhile(g, adm, c, s)
			}
			rec.take()
			err = patch.RemoveFinalizer(ctx, c, s, twv1.SessionFinalizer)
			g.Expect(rec.take()).To(Equal(tc.sent))
			got := &twv1.BrowserSession{}
			getErr := adm.Get(ctx, client.ObjectKeyFromObject(s), got)
			tc.check(g, err, got, getErr)
			if err == nil {
				g.Expect(s.Finalizers).NotTo(ContainElement(twv1.SessionFinalizer), "the caller's object follows the write")
			}
		})
	}

	t.Run("an object without the finalizer costs no request", func(t *testing.T) {
		g := NewWithT(t)
		rec := &recorder{}
		c := controllerClient(t, rec)
		s := newSession(t, g)
		rec.take()
		g.Expect(patch.RemoveFinalizer(context.Background(), c, s, twv1.SessionFinalizer)).To(Succeed())
		g.Expect(rec.take()).To(BeEmpty())
	})
}
