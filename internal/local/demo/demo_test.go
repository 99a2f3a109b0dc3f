package demo_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/tabwarden/tabwarden/internal/local/demo"
	"github.com/tabwarden/tabwarden/internal/local/up"
)

// TestDemoWithoutUp: without a running tabwarden up the demo says how to start one.
func TestDemoWithoutUp(t *testing.T) {
	err := demo.Run(context.Background(), demo.Options{Dir: t.TempDir(), Out: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "start one with `tabwarden up --dir") || !strings.Contains(err.Error(), "tabwarden demo --start") {
		t.Fatalf("demo without tabwarden up: %v; want an error that says how to start one", err)
	}
}

// TestDemo plays the demo end to end as `tabwarden demo --start` does: a real
// tabwarden up (kube-apiserver, controller, agent, headless Chromium, fixture
// site) is started, the incident is played, and what a newcomer reads at each
// step is there: the session Ready, the contacts page open, the compose popup
// adopted and unacknowledged, the session and a BrowserAction refused with the
// corrected call, the acknowledgement closing the popup, the finish closing
// every page of the session and none of the user's, and the metrics counting it.
func TestDemo(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal(`KUBEBUILDER_ASSETS is not set: run KUBEBUILDER_ASSETS="$(hack/envtest.sh)" go test ./internal/local/demo`)
	}
	// The roles' logs are kept, and shown when the demo fails.
	var logs lockedBuffer
	ctrl.SetLogger(funcr.New(func(prefix, args string) { logs.write(prefix + " " + args + "\n") }, funcr.Options{}))
	var out, progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	err := demo.Run(ctx, demo.Options{
		Dir: t.TempDir(), Start: true, Out: &out, Progress: &progress,
		Up: up.Options{ExtensionAddr: up.ExtensionOff},
	})
	t.Log(out.String())
	// fail shows the roles' logs, then what failed (last, where it is read).
	fail := func(format string, args ...any) {
		t.Helper()
		t.Logf("the roles' logs:\n%s", logs.String())
		t.Fatalf(format, args...)
	}
	if err != nil {
		fail("demo: %v\n%s", err, progress.String())
	}
	text := out.String()
	// Step by step, in order.
	want := []string{
		`(?m)^── 1\. An agent starts a session`,
		`(?m)^\$ kubectl wait --for=condition=Ready browsersession/demo-taxes$`,
		`(?m)^browsersession\.tabwarden\.dev/demo-taxes condition met$`,
		`(?m)^demo-taxes +demo-agent-thread-1 +file the 2026 tax return.* +local +Active +Active +\d+s$`,
		`(?m)^True Active: `,
		`(?m)^── 2\. The agent opens the contacts page`,
		`(?m)^contacts +demo-taxes +Open +Temporary +Open +http://127\.0\.0\.1:\d+/contacts `,
		`(?m)^#   the session's +Contacts +/contacts$`,
		`(?m)^── 3\. The agent clicks an e-mail address`,
		`(?m)^kind: BrowserAction\nmetadata:\n  name: demo-click-alice\n`,
		`(?m)^browseraction\.tabwarden\.dev/demo-click-alice created$`,
		`(?m)^Succeeded: demo-taxes-spawn-[0-9a-f]{10}$`,
		`(?m)^── 4\. tabwarden adopts the compose window`,
		`(?m)^demo-taxes-spawn-[0-9a-f]{10} +demo-taxes +Spawned +Unacknowledged +Open +http://127\.0\.0\.1:\d+/compose\?to=alice%40example\.com `,
		`(?m)^#   the session's +Compose +/compose\?to=alice@example\.com$`,
		`(?m)^demo-taxes +demo-agent-thread-1 .* +Active +unacknowledged_spawns +2 +1 `,
		`(?m)^False unacknowledged_spawns: 1 spawned window\(s\) have no disposition.*kubectl patch browserwindow demo-taxes-spawn-[0-9a-f]{10} -n default --type=merge`,
		`(?m)^── 5\. The session is refused new work`,
		`(?m)^demo-click-bob +demo-taxes +contacts +Refused +unacknowledged_spawns +\d+s\n\$ kubectl get browseraction demo-click-bob -o jsonpath='\{\.status\.hint\}'\nkubectl patch browserwindow demo-taxes-spawn-[0-9a-f]{10} -n default --type=merge -p '\{"spec":\{"disposition":"Close"\}\}'$`,
		`(?m)^unacknowledged_spawns: Held: session "demo-taxes" has 1 spawned window\(s\)`,
		`(?m)^form +demo-taxes +Open +Temporary +Pending +\d+s$`,
		`(?m)^── 6\. Acknowledge`,
		`(?m)^\$ kubectl patch browserwindow demo-taxes-spawn-[0-9a-f]{10} -n default --type=merge -p '\{"spec":\{"disposition":"Close"\}\}'$`,
		`(?m)^demo-taxes-spawn-[0-9a-f]{10} +demo-taxes +Spawned +Close +Closed `,
		`(?m)^form +demo-taxes +Open +Temporary +Open +http://`,
		`(?m)^── 7\. The agent finishes its session`,
		`(?m)^demo-taxes +demo-agent-thread-1 .* +Finished +Finished +0 +0 `,
		`(?m)^True Finished: `,
		`(?m)^No resources found in default namespace\.$`,
		`(?m)^── 8\. What an operator sees`,
		// (Prometheus lists families by name.)
		`(?m)^tabwarden_action_results_total\{driver="cdp",phase="Refused",profile="[^"]+",reason="unacknowledged_spawns"\} 1$`,
		`(?m)^tabwarden_action_results_total\{driver="cdp",phase="Succeeded",profile="[^"]+",reason=""\} 1$`,
		`(?m)^tabwarden_session_cleanup_duration_seconds_count\{profile="[^"]+"\} 1$`,
		`(?m)^tabwarden_spawns_adopted_total\{driver="cdp",profile="[^"]+",reason="opener"\} 1$`,
		`(?m)^tabwarden_unacknowledged_spawns\{namespace="default"\} 0$`,
		`(?m)^Done\. Nothing the session owned is left open`,
	}
	at := 0
	for _, w := range want {
		loc := regexp.MustCompile(w).FindStringIndex(text[at:])
		if loc == nil {
			fail("the demo's output lacks %s after offset %d", w, at)
		}
		at += loc[1]
	}
	// After the finish, the browser shows the user's page and nothing of the
	// session (as the fixture site sees its pages: up drives Chromium over a
	// pipe, and nothing else can list its tabs).
	final := text[strings.LastIndex(text, "# what the browser shows now"):]
	final = final[:strings.Index(final, "── 8.")]
	if !strings.Contains(final, "the user's") || strings.Contains(final, "the session's") {
		fail("after the finish the browser should show only the user's page:\n%s", final)
	}
	if !strings.Contains(progress.String(), "tabwarden up: stopped") {
		fail("the tabwarden up started for the demo did not stop:\n%s", progress.String())
	}
}

// lockedBuffer is a buffer the roles' goroutines write their logs to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) write(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
