package authz_test

import (
	"context"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

func session(ns, name, profile string) *twv1.BrowserSession {
	return &twv1.BrowserSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       twv1.BrowserSessionSpec{Thread: "thread-42", Purpose: "file the 2026 tax return form", ProfileName: profile},
	}
}

func open(ns, name, sess string) *twv1.BrowserWindow {
	return testenv.OpenWindow(ns, name, sess, "https://example.com/")
}

// spawned is a window as the agent adopts it; profile "" leaves the label out.
func spawned(ns, name, sess, profile string) *twv1.BrowserWindow {
	w := &twv1.BrowserWindow{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: twv1.BrowserWindowSpec{
			SessionRef: twv1.SessionReference{Name: sess}, Source: twv1.SourceSpawned,
			Spawn: &twv1.SpawnInfo{TabID: "tab-" + name, OpenerTabID: "tab-opener", SpawnedBy: openA, Reason: "opener"},
		},
	}
	if profile != "" {
		w.Labels = map[string]string{twv1.ProfileLabel: profile, twv1.SessionLabel: sess, twv1.SourceLabel: "spawned"}
	}
	return w
}

func tabList(ns, profile string) *twv1.BrowserTabList {
	return &twv1.BrowserTabList{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: profile, Labels: map[string]string{twv1.ProfileLabel: profile}},
		ProfileName: profile, TabCount: 1, Tabs: []twv1.BindableTab{{ID: "tab-" + profile, URL: "https://" + profile + ".example/"}},
	}
}

// emptyTabList is a tab list as the controller creates it: empty, labelled.
func emptyTabList(ns, profile string) *twv1.BrowserTabList {
	return &twv1.BrowserTabList{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: profile, Labels: map[string]string{twv1.ProfileLabel: profile}},
		ProfileName: profile,
	}
}

func merge(s string) client.Patch { return client.RawPatch("application/merge-patch+json", []byte(s)) }

func labelPatch(profile string) client.Patch {
	return merge(`{"metadata":{"labels":{"` + twv1.ProfileLabel + `":"` + profile + `"}}}`)
}

func window(ns, name string) *twv1.BrowserWindow {
	return &twv1.BrowserWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func profile(name string) *twv1.BrowserProfile {
	return &twv1.BrowserProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func lease(ns, name string) *coordv1.Lease {
	return &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func statusPatch(c client.Client, ctx context.Context, obj client.Object, patch string, opts ...client.SubResourcePatchOption) error {
	return c.Status().Patch(ctx, obj, merge(patch), opts...)
}
