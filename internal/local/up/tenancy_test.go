package up

import (
	"testing"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestDesktopProfileAdmitsOnlySessionNamespace: the profiles of `tabwarden up`
// admit the namespace the samples and the printed commands use, and no other.
func TestDesktopProfileAdmitsOnlySessionNamespace(t *testing.T) {
	p := DesktopProfile(DefaultLocalProfile, twv1.DriverCDP)
	for ns, want := range map[string]bool{SessionNamespace: true, Namespace: false, "team-a": false} {
		if got, err := p.Admits(ns, map[string]string{"kubernetes.io/metadata.name": ns}); got != want || err != nil {
			t.Errorf("Admits(%q) = %v, %v; want %v", ns, got, err, want)
		}
	}
}
