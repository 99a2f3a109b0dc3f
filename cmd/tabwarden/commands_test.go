package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestCommands checks the dispatcher and the refusals that need no cluster.
func TestCommands(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "Usage:"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"version"}, 0, "tabwarden "},
		{[]string{"agent"}, 1, "--profile is required"},
		{[]string{"agent", "--profile", "p", "--driver", "fake"}, 1, "the fake driver is for tests"},
		{[]string{"agent", "--profile", "p", "--driver", "webdriver"}, 1, `--driver "webdriver": want cdp or extension`},
		{[]string{"pair", "--state-dir", t.TempDir()}, 1, "no tabwarden agent is running"},
		{[]string{"controller", "--log-level", "loud"}, 1, "--log-level"},
		{[]string{"up", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"controller", "--zap-log-level", "loud"}, 2, "zap-log-level"},
		{[]string{"help"}, 0, "owned       list what a session owns"},
		{[]string{"up", "--help"}, 0, "      --cdp-endpoint string"},
		{[]string{"controller", "-h"}, 0, "      --zap-log-level level"},
		{[]string{"completion", "bash"}, 0, "bash completion V2 for tabwarden"},
		{[]string{"__complete", ""}, 0, "up\tRun everything on this machine"},
		{[]string{"__complete", "owned", "--kubec"}, 0, "--kubeconfig"},
		{[]string{"owned"}, 2, "usage: tabwarden owned SESSION"},
		{[]string{"ack", "w", "later"}, 2, `disposition "later": want keep`},
		{[]string{"cleanup", "s", "--nope"}, 2, "unknown flag: --nope"},
		{[]string{"act", "s", "--window", "w", "--thread", "t"}, 2, "no steps"},
		{[]string{"owned", "s", "--kubeconfig", "/nonexistent/kubeconfig"}, 1, "/nonexistent/kubeconfig"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := dispatch(c.args, &out, &errOut)
		got := out.String() + errOut.String()
		if code != c.code || !strings.Contains(got, c.want) {
			t.Errorf("tabwarden %v: exit %d, output %q; want exit %d and %q", c.args, code, got, c.code, c.want)
		}
	}
}

// TestRoleHelpIsGNUStyle: every role command's help lists its flags as
// --name TYPE, like the verbs and kubectl: no Go-style -name line, no
// anonymous "value" type.
func TestRoleHelpIsGNUStyle(t *testing.T) {
	flagLine := regexp.MustCompile(`^\s+(-\S+)(?: (\S+))?(?:\s{2,}|$)`)
	for _, role := range []string{"up", "demo", "controller", "agent", "pair", "unpair", "version"} {
		var out, errOut bytes.Buffer
		if code := dispatch([]string{role, "--help"}, &out, &errOut); code != 0 {
			t.Errorf("tabwarden %s --help: exit %d: %s", role, code, errOut.String())
			continue
		}
		n := 0
		for _, l := range strings.Split(out.String()+errOut.String(), "\n") {
			m := flagLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			n++
			if !strings.HasPrefix(m[1], "--") || len(m[1]) < 4 {
				t.Errorf("tabwarden %s --help: %q is not a --flag", role, strings.TrimSpace(l))
			}
			if m[2] == "value" {
				t.Errorf("tabwarden %s --help: %q names no type", role, strings.TrimSpace(l))
			}
		}
		if n == 0 && role != "version" {
			t.Errorf("tabwarden %s --help lists no flags:\n%s", role, out.String()+errOut.String())
		}
	}
}
