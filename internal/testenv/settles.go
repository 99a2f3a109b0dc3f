package testenv

import (
	"testing"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tabwarden/tabwarden/internal/metrics"
)

// SpawnSettles reads tabwarden_action_spawn_settles_total of the agents this
// process runs for profile: how many mutating steps needed which settle
// (none, announced, blind). The agents of the e2e tests run in the test's
// process and register with controller-runtime's registry.
func SpawnSettles(t testing.TB, profile string) map[string]float64 {
	t.Helper()
	mfs, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metrics.SpawnSettlesName {
			continue
		}
		for _, m := range mf.GetMetric() {
			var prof, settle string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "profile":
					prof = l.GetValue()
				case "settle":
					settle = l.GetValue()
				}
			}
			if prof == profile {
				out[settle] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}
