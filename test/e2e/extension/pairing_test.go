package extension_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

var (
	pairOnce sync.Once
	pairErr  error
)

// paired pairs the extension with the host once per run, the way a user does it.
func paired(t *testing.T) {
	t.Helper()
	pairOnce.Do(func() { pairErr = pairThroughPopup(t, openActionPopup, "pairing (code → popup → connected)") })
	if pairErr != nil {
		t.Fatalf("pairing through the extension popup: %v", pairErr)
	}
}

// TestPairing: `tabwarden pair` prints a code; the user opens the extension's popup
// (the toolbar button), types the code (and the agent's port), and clicks Pair. The
// extension trades the code for a token, keeps only the key derived from it, connects
// (the host and the extension prove themselves to each other), and the popup shows
// it connected.
func TestPairing(t *testing.T) {
	g := NewWithT(t)
	paired(t)
	g.Expect(host.Paired()).To(BeTrue())
	g.Expect(host.PairedOrigin()).To(Equal("chrome-extension://" + extID))
	g.Expect(host.Driver().Connected()).To(BeTrue())
	snap, err := host.Driver().Snapshot(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(snap.Version).To(Equal("tabwarden-extension/0.1.0"))
	g.Expect(snap.Pages).NotTo(BeEmpty(), "the extension reports the browser's tabs")
	for _, p := range snap.Pages {
		g.Expect(p.URL).NotTo(HavePrefix("chrome-extension://"), "extension pages are never reported")
	}
}

// TestExtensionHasThePinnedID: Chrome gives the unpacked extension/ the id its
// manifest key determines, and the host pins exactly that origin: another
// extension's origin can neither pair nor connect.
func TestExtensionHasThePinnedID(t *testing.T) {
	g := NewWithT(t)
	if otherBuild {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: run the e2e suite on the repository's extension/, without TABWARDEN_E2E_EXTENSION, so that the pinned id is checked")
		}
		t.Skip("TABWARDEN_E2E_EXTENSION loaded another build; its id is pinned explicitly")
	}
	g.Expect(extID).To(Equal(extension.DefaultExtensionID), "the id Chrome gave the unpacked extension/")
	g.Expect(host.ExtensionOrigin()).To(Equal("chrome-extension://" + extension.DefaultExtensionID))
	paired(t)
	g.Expect(host.PairedOrigin()).To(Equal("chrome-extension://" + extension.DefaultExtensionID))
}

// TestRepairFromPopupTab: the user opens the popup page in a tab
// (chrome-extension://<id>/popup.html) and pairs again with a fresh code. The old
// key is revoked, the extension reconnects with the new one (a new epoch), and
// the agent keeps working.
func TestRepairFromPopupTab(t *testing.T) {
	g := NewWithT(t)
	paired(t)
	epoch := host.Driver().Epoch()
	g.Expect(pairThroughPopup(t, openPopupTab, "re-pairing from the popup page in a tab")).To(Succeed())
	g.Expect(host.Driver().Epoch()).To(BeNumerically(">", epoch), "a new pairing replaces the connection")
	g.Expect(host.PairedOrigin()).To(Equal("chrome-extension://" + extID))
	_, err := host.Driver().Snapshot(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
}

// openPopupTab opens the popup page as a tab, as a user typing its address does.
func openPopupTab(ctx context.Context) (string, error) {
	return devtools.create(ctx, wire.CreateTarget{URL: "chrome-extension://" + extID + "/popup.html"})
}

func pairThroughPopup(t *testing.T, open func(context.Context) (string, error), what string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, port, err := net.SplitHostPort(host.Addr())
	if err != nil {
		return err
	}
	begin := time.Now()
	// 1. `tabwarden pair`: ask the running agent for a code over its control socket.
	pairing, err := extension.RequestPairing(ctx, stateDir)
	if err != nil {
		return err
	}
	code := pairing.Code
	if pairing.Addr != host.Addr() {
		return fmt.Errorf("the pairing names address %s, but the host listens on %s", pairing.Addr, host.Addr())
	}
	t.Logf("pairing code %s (expires %s), host port %s", code, pairing.Expires.Format(time.TimeOnly), port)

	// 2. The user clicks the toolbar button: the action popup opens.
	epoch := host.Driver().Epoch()
	popup, err := open(ctx)
	if err != nil {
		return fmt.Errorf("opening the popup: %w", err)
	}
	defer func() {
		_ = devtools.closeTarget(context.Background(), popup) // best-effort cleanup
	}()
	sess, err := devtools.attach(ctx, popup)
	if err != nil {
		return err
	}
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		var ready bool
		err := devtools.eval(ctx, sess, `document.readyState === "complete" && !!document.getElementById("pair-code") && document.getElementById("state").textContent !== "…"`, &ready)
		return ready, err
	}); err != nil {
		return fmt.Errorf("popup never rendered: %w", err)
	}
	var badge string
	_ = devtools.eval(ctx, sess, `document.getElementById("state").textContent`, &badge)
	t.Logf("popup before pairing: badge %q", badge)

	// 3. Type the code and the port, click Pair: real key and mouse events.
	if err := devtools.click(ctx, sess, "#pair-code"); err != nil {
		return err
	}
	if err := devtools.typeText(ctx, sess, code); err != nil {
		return err
	}
	if err := devtools.click(ctx, sess, "#pair-port"); err != nil {
		return err
	}
	if err := devtools.selectAll(ctx, sess); err != nil {
		return err
	}
	if err := devtools.typeText(ctx, sess, port); err != nil {
		return err
	}
	var typed struct{ Code, Port string }
	if err := devtools.eval(ctx, sess, `({Code: document.getElementById("pair-code").value, Port: document.getElementById("pair-port").value})`, &typed); err != nil {
		return err
	}
	if typed.Code != code || typed.Port != port {
		return fmt.Errorf("the form holds code %q port %q after typing %q / %s", typed.Code, typed.Port, code, port)
	}
	if err := devtools.click(ctx, sess, `#pair-form button[type="submit"]`); err != nil {
		return err
	}

	// 4. The popup says so, the host has the pairing and the connection.
	var result string
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		err := devtools.eval(ctx, sess, `document.getElementById("pair-result").textContent`, &result)
		return result != "" && result != "Pairing…", err
	}); err != nil {
		return fmt.Errorf("no pairing result in the popup: %w", err)
	}
	if !strings.HasPrefix(result, "Paired.") {
		return fmt.Errorf("the popup says %q", result)
	}
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		return host.Driver().Connected() && host.Driver().Epoch() > epoch, nil
	}); err != nil {
		return fmt.Errorf("the extension never connected to the host: %w", err)
	}
	shownEpoch := fmt.Sprint(host.Driver().Epoch())
	var shown struct{ State, Epoch, Port string }
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		err := devtools.eval(ctx, sess, `({State: document.getElementById("conn-state").textContent,
			Epoch: document.getElementById("conn-epoch").textContent, Port: document.getElementById("conn-port").textContent})`, &shown)
		return shown.State == "connected" && shown.Epoch == shownEpoch && shown.Port == port, err
	}); err != nil {
		return fmt.Errorf("the popup shows %+v, want connected, epoch %s, port %s: %w", shown, shownEpoch, port, err)
	}
	// The pairing message follows the connection: no "Connecting…" once connected.
	if err := poll(ctx, 10*time.Second, func() (bool, error) {
		err := devtools.eval(ctx, sess, `document.getElementById("pair-result").textContent`, &result)
		return result == "Paired. Connected.", err
	}); err != nil {
		return fmt.Errorf("connected, but the popup still says %q: %w", result, err)
	}
	if _, err := host.Driver().Snapshot(ctx); err != nil {
		return err
	}
	record(t, what, time.Since(begin))
	return nil
}

// openActionPopup opens the extension's action popup as a click on its toolbar
// button does (headless Chromium has no toolbar: chrome.action.openPopup() from
// the extension's own worker is the same browser path), and returns its target.
func openActionPopup(ctx context.Context) (string, error) {
	sw, err := runningWorker(ctx)
	if err != nil {
		return "", err
	}
	sess, err := devtools.attach(ctx, sw.TargetID)
	if err != nil {
		return "", err
	}
	defer devtools.detach(ctx, sess)
	// Without Runtime.enable, Runtime.evaluate on a fresh worker session may run
	// before the extension bindings exist ("chrome is not defined").
	if err := devtools.do(ctx, sess, wire.RuntimeEnable{}); err != nil {
		return "", err
	}
	_ = devtools.do(ctx, sess, wire.RunIfWaitingForDebugger{})
	// Even then, a worker that is still starting (its module graph loading) may not
	// have its bindings yet: wait for them.
	if err := poll(ctx, 20*time.Second, func() (bool, error) {
		var ready bool
		err := devtools.eval(ctx, sess, `typeof chrome === "object" && !!chrome.action`, &ready)
		return ready, err
	}); err != nil {
		return "", fmt.Errorf("the extension's worker never got its chrome.* bindings: %w", err)
	}
	// In the last focused normal window: a popup window (a page's compose popup)
	// has no toolbar to open it from.
	var res string
	if err := devtools.eval(ctx, sess, `chrome.windows.getLastFocused({windowTypes: ["normal"]}).then((w) => chrome.action.openPopup({windowId: w.id})).then(() => "ok", (e) => "error: " + e.message)`, &res); err != nil {
		return "", err
	}
	if res != "ok" {
		return "", fmt.Errorf("chrome.action.openPopup: %s", res)
	}
	var id string
	err = poll(ctx, 20*time.Second, func() (bool, error) {
		ps, err := devtools.pages(ctx)
		for _, p := range ps {
			if p.URL == "chrome-extension://"+extID+"/popup.html" {
				id = p.TargetID
			}
		}
		return id != "", err
	})
	return id, err
}

// runningWorker returns the extension's service worker, starting it when Chrome
// has put it to sleep (an unpaired worker has no socket to keep it awake).
func runningWorker(ctx context.Context) (wire.TargetInfo, error) {
	if sw, ok, err := worker(ctx); err != nil || ok {
		return sw, err
	}
	err := withServiceWorkerDomain(ctx, func(sess string, _ func() []swVersion) error {
		return devtools.do(ctx, sess, wire.StartWorker{ScopeURL: "chrome-extension://" + extID + "/"})
	})
	if err != nil {
		return wire.TargetInfo{}, err
	}
	return waitWorker(ctx, 20*time.Second)
}

// poll calls f every 100 ms until it reports done, fails for good after timeout,
// or ctx ends. Errors of f are retried; the last one is returned on timeout.
func poll(ctx context.Context, timeout time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		done, err := f()
		if done && err == nil {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last == nil {
				last = fmt.Errorf("not done after %v", timeout)
			}
			return last
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
