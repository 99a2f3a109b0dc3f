package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// task is one scripted task, written once against Driver. run does what a
// model would with the tool's observations (it finds every element by role and
// text in them); done checks the fixture's server-side record, never the
// tool's word.
type task struct {
	id, name string
	path     string
	run      func(ctx context.Context, d Driver, site *fixture.AgentSite) error
	done     func(site *fixture.AgentSite) (bool, string)
}

// replyText is what the agent replies to the e-mail.
const replyText = "Thanks Carol, the numbers look right to me."

var tasks = []task{
	{id: "a", name: "read an e-mail, reply in its compose popup", path: "/agents/inbox", run: readAndReply,
		done: func(s *fixture.AgentSite) (bool, string) {
			replies, _, _, _, _ := s.Records()
			return slices.Contains(replies, replyText), fmt.Sprintf("replies sent: %d", len(replies))
		}},
	{id: "b", name: "log in through a cross-site iframe", path: "/agents/login", run: crossSiteLogin,
		done: func(s *fixture.AgentSite) (bool, string) {
			_, logins, _, _, _ := s.Records()
			return slices.Contains(logins, fixture.AgentUser), fmt.Sprintf("logins: %d", len(logins))
		}},
	{id: "c", name: "pick from a custom select in a shadow root", path: "/agents/picker", run: customSelect,
		done: func(s *fixture.AgentSite) (bool, string) {
			_, _, picks, _, _ := s.Records()
			return slices.Equal(picks, []string{fixture.PickedColor}), fmt.Sprintf("picks: %v", picks)
		}},
	{id: "d", name: "dismiss a confirm dialog", path: "/agents/confirm", run: dismissConfirm,
		done: func(s *fixture.AgentSite) (bool, string) {
			_, _, _, dialogs, _ := s.Records()
			return slices.Equal(dialogs, []string{"dismissed"}), fmt.Sprintf("dialogs: %v", dialogs)
		}},
	{id: "e", name: "the incident: three compose popups, then end", path: "/agents/contacts", run: incident,
		done: func(s *fixture.AgentSite) (bool, string) {
			_, _, _, _, compose := s.Records()
			ok := len(compose) == len(fixture.Contacts)
			for _, c := range fixture.Contacts {
				ok = ok && slices.Contains(compose, c)
			}
			return ok, fmt.Sprintf("compose popups loaded: %d", len(compose))
		}},
}

// a: open the message, read its body, reply in the popup Reply opens.
func readAndReply(ctx context.Context, d Driver, _ *fixture.AgentSite) error {
	o, err := d.Observe(ctx)
	if err != nil {
		return err
	}
	if err := click(ctx, d, o, "link", "Quarterly numbers"); err != nil {
		return err
	}
	if o, err = d.Observe(ctx); err != nil {
		return err
	}
	if !strings.Contains(o.Text, fixture.MessageSecret) {
		return fmt.Errorf("the message's body is not in the observation")
	}
	if err := click(ctx, d, o, "button", "Reply"); err != nil {
		return err
	}
	if err := d.SwitchTo(ctx, "/agents/reply"); err != nil {
		return err
	}
	o, box, err := observeFind(ctx, d, "textbox", "Message")
	if err != nil {
		return err
	}
	if err := d.Type(ctx, box, replyText); err != nil {
		return err
	}
	return click(ctx, d, o, "button", "Send")
}

// b: the login form lives in a frame of another site.
func crossSiteLogin(ctx context.Context, d Driver, _ *fixture.AgentSite) error {
	// The frame loads after the page: look again when the form is not there yet.
	o, _, err := observeFind(ctx, d, "textbox", "Username")
	if o == nil {
		return err
	}
	for _, f := range []struct{ label, value string }{{"Username", fixture.AgentUser}, {"Password", fixture.AgentPassword}} {
		e, err := o.find("textbox", f.label)
		if err != nil {
			return fmt.Errorf("%w (the form is in a cross-site iframe%s)", err, iframeLine(o.Text))
		}
		if err := d.Type(ctx, e, f.value); err != nil {
			return err
		}
	}
	return click(ctx, d, o, "button", "Sign in")
}

// c: open the custom combobox, then click the option.
func customSelect(ctx context.Context, d Driver, _ *fixture.AgentSite) error {
	o, err := d.Observe(ctx)
	if err != nil {
		return err
	}
	if err := click(ctx, d, o, "combobox", "Theme color"); err != nil {
		return err
	}
	_, opt, err := observeFind(ctx, d, "option", fixture.PickedColor)
	if err != nil {
		return err
	}
	return d.Click(ctx, opt)
}

// d: Delete draft asks confirm(); the agent dismisses it.
func dismissConfirm(ctx context.Context, d Driver, _ *fixture.AgentSite) error {
	o, err := d.Observe(ctx)
	if err != nil {
		return err
	}
	if err := click(ctx, d, o, "button", "Delete draft"); err != nil {
		return err
	}
	return d.Dialog(ctx, false)
}

// e: click every address (each spawns a standalone compose popup).
func incident(ctx context.Context, d Driver, _ *fixture.AgentSite) error {
	o, err := d.Observe(ctx)
	if err != nil {
		return err
	}
	for _, c := range fixture.Contacts {
		if err := click(ctx, d, o, "link", c); err != nil {
			return err
		}
	}
	return nil
}

func click(ctx context.Context, d Driver, o *Obs, role, name string) error {
	e, err := o.find(role, name)
	if err != nil {
		return err
	}
	return d.Click(ctx, e)
}

// observeFind observes until the element shows (at most three observations,
// as a model looks again at a page that is still changing; the last one in
// more detail where the tool has a way to ask for it).
func observeFind(ctx context.Context, d Driver, role, name string) (*Obs, Elem, error) {
	for i := 0; ; i++ {
		observe := d.Observe
		if dd, ok := d.(detailer); ok && i == 2 {
			observe = dd.ObserveDetailed
		}
		o, err := observe(ctx)
		if err != nil {
			return nil, Elem{}, err
		}
		e, err := o.find(role, name)
		if err == nil || i == 2 {
			return o, e, err
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// iframeLine is what the observation says about the login iframe, when it
// says why it shows nothing of it: ": <that line>".
func iframeLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "iframe") && strings.Contains(l, "cross-origin") {
			return "; the observation says: " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		}
	}
	return ""
}

// detailer is a Driver whose tool can observe in more detail than by default
// (chrome-devtools-mcp's take_snapshot verbose): what a model tries when an
// element it expects is missing from the default snapshot.
type detailer interface {
	ObserveDetailed(ctx context.Context) (*Obs, error)
}
