// Package chromiumtest launches the real Chromium that a test package (or a
// benchmark) shares. testenv.Main uses it; the CDP driver's own tests, which
// cannot import testenv (it imports the driver), use Main here.
package chromiumtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// LaunchTimeout bounds Launch: finding the binary and waiting for its DevTools line.
const LaunchTimeout = time.Minute

// Launch finds Chromium and launches it with o within LaunchTimeout. A missing
// Chromium is an error, never a reason to skip: tabwarden is only proven on a
// real browser, and CI's image must provide one.
func Launch(o chromium.Options) (*chromium.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), LaunchTimeout)
	defer cancel()
	return LaunchContext(ctx, o)
}

// LaunchContext is Launch bounded by ctx instead.
func LaunchContext(ctx context.Context, o chromium.Options) (*chromium.Process, error) {
	if err := Require(); err != nil {
		return nil, err
	}
	p, err := chromium.Launch(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("launching chromium: %w", err)
	}
	return p, nil
}

// Require fails (never skips) when no Chromium is installed.
func Require() error {
	if _, err := chromium.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			return fmt.Errorf("%w (CI: the image must provide Chromium)", err)
		}
		return err
	}
	return nil
}

// Shared is what Main set up for the package.
type Shared struct {
	Chrome *chromium.Process
	// Site is the fixture site, when Main was asked for it.
	Site *fixture.Server
}

// Main runs the package's tests with one Chromium launched with o and, when
// site is set, the fixture site, handed to set before the tests run. It exits
// with the tests' code, or 1 when Chromium is missing or does not start.
func Main(m *testing.M, o chromium.Options, site bool, set func(Shared)) {
	os.Exit(run(m, o, site, set))
}

func run(m *testing.M, o chromium.Options, site bool, set func(Shared)) int {
	var s Shared
	if site {
		s.Site = fixture.Serve()
		defer s.Site.Close()
	}
	var err error
	if s.Chrome, err = Launch(o); err != nil {
		return Fail(err)
	}
	defer func() { _ = s.Chrome.Close() }() // best-effort cleanup
	set(s)
	return m.Run()
}

// Fail prints why a package's set-up failed, as go test prints a failure, and
// returns the exit code 1.
func Fail(err error) int {
	if err == nil {
		err = errors.New("set-up failed")
	}
	fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
	return 1
}
