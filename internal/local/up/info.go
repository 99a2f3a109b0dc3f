package up

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
)

// Info is written to Dir/up.json while up runs (and removed when it stops).
type Info struct {
	PID        int    `json:"pid"`
	Kubeconfig string `json:"kubeconfig"`
	// RoleKubeconfigs are the kubeconfigs the roles run under, by user name
	// (tabwarden:controller, tabwarden:agent:<profile>).
	RoleKubeconfigs map[string]string `json:"roleKubeconfigs"`
	APIServer       string            `json:"apiServer"`
	Namespace       string            `json:"namespace"`
	LocalProfile    string            `json:"localProfile"`
	// DevToolsHTTP is the endpoint of the Chrome given with --cdp-endpoint;
	// empty when up launched Chromium, which it drives over a pipe and which
	// has no DevTools port at all.
	DevToolsHTTP string `json:"devToolsHTTP,omitempty"`
	// ChromiumPID is the Chromium up launched (the leader of its process group).
	ChromiumPID         int    `json:"chromiumPID,omitempty"`
	ChromiumUserDataDir string `json:"chromiumUserDataDir,omitempty"`
	// StartPage is the page Chromium opened at launch: the user's own tab,
	// which tabwarden never adopts, reads or closes.
	StartPage        string `json:"startPage,omitempty"`
	ExtensionProfile string `json:"extensionProfile,omitempty"`
	ExtensionAddr    string `json:"extensionAddr,omitempty"`
	StateDir         string `json:"stateDir"`
	// DataDir is etcd's data, the cluster's state kept across runs (EtcdDataDir).
	DataDir string `json:"dataDir,omitempty"`
	// FixtureURL is the fixture site's base URL (the incident: FixtureURL+"/contacts").
	FixtureURL string `json:"fixtureURL,omitempty"`
	// MetricsURL serves the roles' Prometheus metrics (docs/metrics.md).
	MetricsURL string `json:"metricsURL,omitempty"`
	// Processes are the processes up started (its descendants when it became ready).
	Processes []Proc `json:"processes"`
	// StartSeconds is how long up took to become ready.
	StartSeconds float64 `json:"startSeconds"`

	// UserKubeconfig is UserName's kubeconfig (UserKubeconfigFile).
	UserKubeconfig string `json:"userKubeconfig,omitempty"`
}

// announce records how long up took and what it started, writes up.json and
// the pids file, and prints the ready line and what to run next.
func (r *runner) announce(context.Context) error {
	r.info.StartSeconds = time.Since(r.began).Seconds()
	r.info.Processes = started(r.before)
	if err := writeInfo(r.dir, r.info); err != nil {
		return err
	}
	fmt.Fprint(r.o.Stdout, readyText(r.o, r.repo, r.info))
	return nil
}

// writeInfo writes info to Dir/up.json and its processes to Dir/pids.
func writeInfo(dir string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, InfoFile), append(b, '\n')); err != nil {
		return err
	}
	var sb strings.Builder
	for _, p := range info.Processes {
		sb.WriteString(p.String() + "\n")
	}
	return writeFile(filepath.Join(dir, PidsFile), []byte(sb.String()))
}

// ReadInfo reads Dir/up.json of a running tabwarden up. It fails with a
// message that says how to start one when none runs there.
func ReadInfo(dir string) (Info, error) {
	var info Info
	b, err := os.ReadFile(filepath.Join(dir, InfoFile))
	if errors.Is(err, os.ErrNotExist) {
		return info, fmt.Errorf("no tabwarden up runs with --dir %s (no %s): start one with `tabwarden up --dir %s`", dir, InfoFile, dir)
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", filepath.Join(dir, InfoFile), err)
	}
	if info.PID <= 0 || syscall.Kill(info.PID, 0) != nil {
		return info, fmt.Errorf("the tabwarden up of %s (pid %d) is not running any more: start it again with `tabwarden up --dir %s`", filepath.Join(dir, InfoFile), info.PID, dir)
	}
	return info, nil
}

// readyText is what up prints once ready: what runs where, and what to run next.
func readyText(o Options, repo string, info Info) string {
	var b strings.Builder
	kc := Rel(info.Kubeconfig)
	samples := Rel(filepath.Join(repo, "config", "samples"))
	fmt.Fprintf(&b, "%s in %.1fs\n\n", ReadyPrefix, info.StartSeconds)
	fmt.Fprintf(&b, "  API server     %s   kubeconfig %s (admin)\n", info.APIServer, kc)
	if info.UserKubeconfig != "" {
		fmt.Fprintf(&b, "  you, not admin %s   kubeconfig %s (tabwarden-edit in %s: give this one to an agent or MCP client)\n", UserName, Rel(info.UserKubeconfig), SessionNamespace)
	}
	if info.DataDir != "" {
		fmt.Fprintf(&b, "  cluster state  %s, kept across runs (%s up --fresh starts empty)\n", Rel(info.DataDir), o.Self)
	}
	fmt.Fprintf(&b, "  controller     running as %s (kubeconfig %s)\n", access.ControllerUser, Rel(info.RoleKubeconfigs[access.ControllerUser]))
	browserDesc := "headless Chromium"
	if o.CDPEndpoint != "" {
		browserDesc = "Chrome at " + o.CDPEndpoint
	} else if o.Headful {
		browserDesc = "Chromium"
	}
	if info.DevToolsHTTP != "" {
		fmt.Fprintf(&b, "  agent          profile %-10s cdp driver, %s (DevTools %s)\n", info.LocalProfile, browserDesc, info.DevToolsHTTP)
	} else {
		fmt.Fprintf(&b, "  agent          profile %-10s cdp driver, %s over a pipe (no DevTools port); your own tab: %s\n", info.LocalProfile, browserDesc, orBlank(info.StartPage))
	}
	if info.ExtensionAddr != "" {
		fmt.Fprintf(&b, "  agent          profile %-10s extension driver, host on %s (pair your Chrome, below)\n", info.ExtensionProfile, info.ExtensionAddr)
	}
	if info.FixtureURL != "" {
		fmt.Fprintf(&b, "  fixture site   %s   (the incident: %s/contacts, whose addresses open compose popups)\n", info.FixtureURL, info.FixtureURL)
	}
	if info.MetricsURL != "" {
		fmt.Fprintf(&b, "  metrics        %s   (docs/metrics.md)\n", info.MetricsURL)
	}
	fmt.Fprintf(&b, "  identities     each agent runs as tabwarden:agent:<profile> (kubeconfigs %s/agent-*.kubeconfig);\n", Rel(filepath.Dir(info.Kubeconfig)))
	fmt.Fprintf(&b, "                 the admission policies of config/admission bind admin too\n")
	fmt.Fprintf(&b, "\nSessions in namespace %s may use these profiles (spec.namespaces); others are refused.\n", SessionNamespace)
	if info.FixtureURL != "" {
		fmt.Fprintf(&b, "\nWatch the incident, step by step, in another terminal:\n\n  %s demo --dir %s\n", o.Self, Rel(filepath.Dir(info.Kubeconfig)))
	}
	fmt.Fprintf(&b, "\nNext, in another terminal:\n\n")
	fmt.Fprintf(&b, "  export KUBECONFIG=%s\n", info.Kubeconfig)
	fmt.Fprintf(&b, "  kubectl apply -f %s/session.yaml -f %s/window-open.yaml\n", samples, samples)
	fmt.Fprintf(&b, "  kubectl get browsersessions,browserwindows          # the window turns Open with a tab id\n")
	fmt.Fprintf(&b, "  kubectl apply -f %s/action.yaml                     # observe the form, type a name, save\n", samples)
	fmt.Fprintf(&b, "  kubectl get browserprofiles                         # profiles, their drivers and connections\n")
	fmt.Fprintf(&b, "  kubectl delete browsersession tax-form              # ends the session: its pages close\n")
	if info.ExtensionAddr != "" {
		_, port, _ := strings.Cut(info.ExtensionAddr, ":")
		fmt.Fprintf(&b, "\nUse your own Chrome as profile %s:\n\n", info.ExtensionProfile)
		fmt.Fprintf(&b, "  1. open chrome://extensions, turn on Developer mode, Load unpacked: %s\n", filepath.Join(repo, "extension"))
		fmt.Fprintf(&b, "  2. run: %s pair --state-dir %s   (prints a code, valid 5 minutes)\n", o.Self, Rel(info.StateDir))
		fmt.Fprintf(&b, "  3. click the tabwarden toolbar icon, enter the code and port %s, press Pair\n", port)
		fmt.Fprintf(&b, "  4. kubectl get browserprofile %s   (Connected: True)\n", info.ExtensionProfile)
	}
	fmt.Fprintf(&b, "\n%s\n", ReadyEnd)
	return b.String()
}

func orBlank(page string) string {
	if page == "" {
		return "about:blank"
	}
	return page
}
