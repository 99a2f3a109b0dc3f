package index

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// The JSON decoder allocates every string of every object anew: at 10,000
// sessions the caches hold 50,000 copies of "tabwarden.dev/page", of each
// condition's type, status and reason, of every label key. Intern replaces the
// strings of few distinct values with one shared copy as an object enters a
// cache (a transform): the object is equal field for field, so what the roles
// read, compare and patch is unchanged. Values that name one object (names,
// uids, session labels, messages, urls) are left alone.

// internMax bounds the table: past it, new values are kept as they are.
const internMax = 4096

var interned = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

// interner interns under one lock, taken once per object.
type interner struct{}

func (interner) s(p *string) {
	if *p == "" {
		return
	}
	if c, ok := interned.m[*p]; ok {
		*p = c
		return
	}
	if len(interned.m) < internMax {
		interned.m[*p] = *p
	}
}

// internedLabels are the label keys whose values are few (not the session label).
var internedLabels = map[string]bool{twv1.ProfileLabel: true, twv1.SourceLabel: true}

func (in interner) meta(m *metav1.ObjectMeta) {
	in.s(&m.Namespace)
	for i := range m.Finalizers {
		in.s(&m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		in.s(&m.OwnerReferences[i].APIVersion)
		in.s(&m.OwnerReferences[i].Kind)
	}
	if len(m.Labels) > 0 {
		labels := make(map[string]string, len(m.Labels))
		for k, v := range m.Labels {
			if internedLabels[k] {
				in.s(&v)
			}
			in.s(&k)
			labels[k] = v
		}
		m.Labels = labels
	}
}

func (in interner) conditions(cs []metav1.Condition) {
	for i := range cs {
		in.s(&cs[i].Type)
		in.s((*string)(&cs[i].Status))
		in.s(&cs[i].Reason)
	}
}

// Intern shares the few-valued strings of a tabwarden object (and the metadata
// of any object) with every other object interned: a cache transform, like
// SlimAction. It returns o.
func Intern(o any) (any, error) {
	in := interner{}
	interned.Lock()
	defer interned.Unlock()
	switch x := o.(type) {
	case *twv1.BrowserWindow:
		in.meta(&x.ObjectMeta)
		in.s((*string)(&x.Spec.Source))
		in.s((*string)(&x.Spec.Disposition))
		in.s((*string)(&x.Status.Phase))
		in.s(&x.Status.ProfileName)
		in.conditions(x.Status.Conditions)
	case *twv1.BrowserSession:
		in.meta(&x.ObjectMeta)
		in.s(&x.Spec.ProfileName)
		in.s((*string)(&x.Spec.Placement))
		in.s((*string)(&x.Spec.State))
		in.s((*string)(&x.Status.Phase))
		in.s(&x.Status.ProfileName)
		in.s(&x.Status.EndReason)
		in.conditions(x.Status.Conditions)
	case *twv1.BrowserAction:
		in.meta(&x.ObjectMeta)
		in.s((*string)(&x.Status.Phase))
		in.conditions(x.Status.Conditions)
	}
	return o, nil
}
