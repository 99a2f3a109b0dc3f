package up

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/cdp/wire"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/browser/extension"
)

// startExtensionHost starts the extension host on Options.ExtensionAddr
// (unless ExtensionOff), first: a taken port fails in a second, not after the
// control plane started.
func (r *runner) startExtensionHost(context.Context) error {
	if r.o.ExtensionAddr == ExtensionOff {
		return nil
	}
	h, err := extension.New(extension.Options{
		Addr: r.o.ExtensionAddr, StateDir: filepath.Join(r.dir, StateDir), Logger: r.log.WithName("extension"),
	})
	if err != nil {
		return err
	}
	// Ended by shutDown.
	if err := h.Start(context.Background()); err != nil {
		return fmt.Errorf("%w\n(another tabwarden agent may be serving the extension: pass --extension-addr 127.0.0.1:<port>, or --extension-addr off)", err)
	}
	r.host = h
	return nil
}

// launchBrowser launches a headless Chromium in the background (unless
// Options.CDPEndpoint names a Chrome), while the control plane starts. It is
// driven over a pipe: no DevTools port for a page or another local user to
// reach (invariant 8). It opens the fixture site's home page as the user's own
// tab.
func (r *runner) launchBrowser(context.Context) error {
	if r.o.CDPEndpoint != "" {
		return nil
	}
	r.progress("launching headless Chromium")
	l := &launch{ch: make(chan chromeResult, 1)}
	if r.info.FixtureURL != "" {
		l.startPage = r.info.FixtureURL + "/"
	}
	r.chrome = l
	go func() {
		// Not ctx: the process is ended by shutDown, not by the signal.
		p, err := chromium.Launch(context.Background(), chromium.Options{Headful: r.o.Headful, StartTimeout: 90 * time.Second, Pipe: true, StartURL: l.startPage})
		l.ch <- chromeResult{p, err}
	}()
	return nil
}

// connectBrowser connects the cdp driver of profile local: to the Chromium
// launchBrowser launched, over its pipe, or to the Chrome at
// Options.CDPEndpoint.
func (r *runner) connectBrowser(ctx context.Context) error {
	endpoint := r.o.CDPEndpoint
	var dial func(context.Context, func(wire.Event)) (*wire.Conn, error)
	if r.chrome != nil {
		p, err := r.chrome.wait()
		if err != nil {
			return fmt.Errorf("launching Chromium: %w", err)
		}
		endpoint, dial = "pipe", p.Dial
		r.chromeExited, r.chromeErr = p.Done(), p.Err
		r.info.ChromiumPID, r.info.ChromiumUserDataDir, r.info.StartPage = p.Pid(), p.UserDataDir, r.chrome.startPage
		r.progress("Chromium up (pid %d), driven over a pipe: no DevTools port", p.Pid())
	} else {
		r.info.DevToolsHTTP = strings.TrimSuffix(r.o.CDPEndpoint, "/")
	}
	if ctx.Err() != nil {
		return errStopped
	}

	// The Chromium up launched is a new browser: the ledger's records of the
	// last run's (the pages of its windows) are void, and the agent tells those
	// windows that their pages went with a restart (Open ones open again).
	var instance string
	if r.chrome != nil {
		nonce := make([]byte, 16)
		_, _ = rand.Read(nonce) // crypto/rand.Read never fails
		instance = "tabwarden-up/" + hex.EncodeToString(nonce)
	}
	dialCtx, cancelDial := context.WithTimeout(ctx, time.Minute)
	defer cancelDial()
	var err error
	r.cdpBrowser, err = cdp.New(dialCtx, endpoint, cdp.Options{
		Pool: true, Logger: r.log.WithName("cdp"), LedgerPath: cdp.LedgerFile(filepath.Join(r.dir, StateDir), r.o.LocalProfile),
		BlockPorts: r.ownPorts(), Dial: dial, Instance: instance,
	})
	if err != nil {
		return orStopped(ctx, fmt.Errorf("connecting to Chrome DevTools at %s: %w", endpoint, err))
	}
	return nil
}

// ownPorts are tabwarden's own endpoints (the API server, etcd's client and
// peer ports, the metrics endpoint, the extension host): out of the pages'
// reach too (invariant 8), besides the DevTools port itself.
func (r *runner) ownPorts() []int {
	var ports []int
	addrs := []string{r.cp.Config.Host, r.info.MetricsURL}
	if r.cp.etcd != nil {
		addrs = append(addrs, r.cp.etcd.ClientURL.String(), r.cp.etcd.PeerURL.String())
	}
	for _, a := range addrs {
		if u, err := url.Parse(a); err == nil {
			if n, err := strconv.Atoi(u.Port()); err == nil {
				ports = append(ports, n)
			}
		}
	}
	if r.host != nil {
		if _, p, err := net.SplitHostPort(r.host.Addr()); err == nil {
			if n, err := strconv.Atoi(p); err == nil {
				ports = append(ports, n)
			}
		}
	}
	return ports
}

// chromeResult is how a launch of Chromium ended: the process, or why not.
type chromeResult struct {
	p   *chromium.Process
	err error
}

// launch is a Chromium being launched; wait returns the result, once known.
type launch struct {
	ch   chan chromeResult
	once sync.Once
	r    chromeResult
	// startPage is the page it opens as the user's own tab (empty: about:blank).
	startPage string
}

func (l *launch) wait() (*chromium.Process, error) {
	l.once.Do(func() { l.r = <-l.ch })
	return l.r.p, l.r.err
}
