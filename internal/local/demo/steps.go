package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
	"github.com/tabwarden/tabwarden/internal/local/fixture"
)

// The steps of the incident, in the order play plays them. Each prints a
// header, what a user would run and what they would see.

// startSession creates the session (thread and purpose, on profile local) and
// waits until it is Ready.
func (d *demo) startSession(ctx context.Context) error {
	d.header("An agent starts a session: who drives, and why",
		"Every page an agent opens belongs to a BrowserSession that names its thread and purpose.")
	s := &twv1.BrowserSession{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserSession"},
		ObjectMeta: metav1.ObjectMeta{Name: SessionName, Namespace: d.ns},
		Spec: twv1.BrowserSessionSpec{
			Thread: Thread, Purpose: Purpose, ProfileName: d.info.LocalProfile, Placement: twv1.PlacementWindow,
		},
	}
	d.apply(s)
	if err := d.k8s.Create(ctx, s); err != nil {
		return fmt.Errorf("creating the session: %w", err)
	}
	d.run(fmt.Sprintf("kubectl wait --for=condition=Ready browsersession/%s", SessionName))
	if err := d.waitFor(ctx, "the session to be Ready", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && apimeta.IsStatusConditionTrue(s.Status.Conditions, twv1.ReadyCondition), err
	}); err != nil {
		return err
	}
	d.say("browsersession.tabwarden.dev/%s condition met", SessionName)
	return d.getSessions(ctx)
}

// openContacts opens the fixture site's contacts page in an Open window of
// the session.
func (d *demo) openContacts(ctx context.Context) error {
	d.header("The agent opens the contacts page",
		"An Open BrowserWindow: the agent asked for it, so the session owns it. It opens unfocused, in a window of the session's own.")
	w := d.openWindow(ContactsWindow, d.info.FixtureURL+"/contacts")
	d.apply(w)
	if err := d.k8s.Create(ctx, w); err != nil {
		return fmt.Errorf("creating the contacts window: %w", err)
	}
	d.run(fmt.Sprintf("kubectl wait --for=condition=Ready browserwindow/%s", ContactsWindow))
	if err := d.waitFor(ctx, "the contacts page to open", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(w), w)
		return err == nil && w.Status.Phase == twv1.WindowOpen && w.Status.Title == fixture.TitleContacts, err
	}); err != nil {
		return err
	}
	d.say("browserwindow.tabwarden.dev/%s condition met", ContactsWindow)
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	return d.browserPages(ctx)
}

// clickContact clicks the first address: the page spawns a compose popup.
func (d *demo) clickContact(ctx context.Context) error {
	d.header("The agent clicks an e-mail address",
		"Agents drive pages through BrowserActions. This click makes the page call window.open: Chrome opens a standalone compose popup nobody asked tabwarden for.")
	act, err := d.act(ctx, ClickAction, fixture.Contacts[0])
	if err != nil {
		return err
	}
	if act.Status.Phase != twv1.ActionSucceeded {
		return fmt.Errorf("the click on %s did not succeed: %s %s: %s", fixture.Contacts[0], act.Status.Phase, act.Status.Reason, act.Status.Message)
	}
	d.run(fmt.Sprintf(`kubectl get browseraction %s -o jsonpath='{.status.phase}: {.status.spawned[*].name}'`, ClickAction))
	names := make([]string, 0, len(act.Status.Spawned))
	for _, sw := range act.Status.Spawned {
		names = append(names, sw.Name)
	}
	d.say("%s: %s", act.Status.Phase, strings.Join(names, " "))
	return nil
}

// act creates a BrowserAction of the session clicking text on the contacts
// page, prints it, and waits for its result.
func (d *demo) act(ctx context.Context, name, text string) (*twv1.BrowserAction, error) {
	act := &twv1.BrowserAction{
		TypeMeta:   metav1.TypeMeta{APIVersion: twv1.GroupVersion.String(), Kind: "BrowserAction"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.ns},
		Spec: twv1.BrowserActionSpec{
			SessionRef: twv1.SessionReference{Name: SessionName}, Thread: Thread,
			WindowRef: twv1.ActionWindowReference{Name: ContactsWindow},
			Steps:     []twv1.ActionStep{{Type: twv1.StepClick, Target: &twv1.ActionTarget{Text: text}}},
		},
	}
	d.apply(act)
	if err := d.k8s.Create(ctx, act); err != nil {
		return nil, fmt.Errorf("creating the action %s: %w", name, err)
	}
	if err := d.waitFor(ctx, "the action "+name+" to finish", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(act), act)
		return err == nil && act.Status.CompletionTime != nil, err
	}); err != nil {
		return nil, err
	}
	return act, nil
}

// seeAdoption waits until the popup is adopted as the session's Spawned,
// unacknowledged window and the session counts it.
func (d *demo) seeAdoption(ctx context.Context) error {
	d.header("tabwarden adopts the compose window into the session",
		"Chrome reports the popup with the contacts page as its opener; the agent makes it a Spawned BrowserWindow of the session, with no disposition yet: unacknowledged.")
	var compose *twv1.BrowserWindow
	if err := d.waitFor(ctx, "the compose popup to be adopted", func() (bool, error) {
		var err error
		compose, err = d.spawned(ctx)
		return compose != nil && compose.Status.Phase == twv1.WindowOpen, err
	}); err != nil {
		return err
	}
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	if err := d.browserPages(ctx); err != nil {
		return err
	}
	s := &twv1.BrowserSession{}
	if err := d.waitFor(ctx, "the session to count the spawn", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: SessionName}, s)
		// Both pages live and the spawn counted: the session's status is
		// coalesced, so its counts can arrive in two writes.
		return err == nil && s.Status.Windows.Unacknowledged == 1 && s.Status.Windows.Live == 2, err
	}); err != nil {
		return err
	}
	return d.getSessions(ctx)
}

// seeRefusal shows the session's next action refused and its next window
// held (unacknowledged_spawns), each with the corrected call.
func (d *demo) seeRefusal(ctx context.Context) error {
	d.header("The session is refused new work until the spawn is acknowledged",
		"The agent tries to click another address and to open the form: both wait. A guard never says a bare no: the reason and the corrected call come with it.")
	compose, err := d.spawned(ctx)
	if err != nil || compose == nil {
		return fmt.Errorf("the compose window: %v", err)
	}
	act, err := d.act(ctx, ActionName, fixture.Contacts[1])
	if err != nil {
		return err
	}
	if err := d.get(ctx, "browseractions", ActionName, ""); err != nil {
		return err
	}
	d.run(fmt.Sprintf("kubectl get browseraction %s -o jsonpath='{.status.hint}'", ActionName))
	d.say("%s", act.Status.Hint)

	form := d.openWindow(FormWindow, d.info.FixtureURL+"/quiet?form=taxes")
	d.apply(form)
	if err := d.k8s.Create(ctx, form); err != nil {
		return fmt.Errorf("creating the form window: %w", err)
	}
	var held *metav1.Condition
	if err := d.waitFor(ctx, "the form window to be held", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(form), form)
		held = apimeta.FindStatusCondition(form.Status.Conditions, twv1.OpenedCondition)
		return err == nil && held != nil && held.Reason == twv1.ReasonUnacknowledgedSpawns, err
	}); err != nil {
		return err
	}
	d.run(fmt.Sprintf(`kubectl get browserwindow %s -o jsonpath='{.status.conditions[?(@.type=="Opened")].reason}: {.status.conditions[?(@.type=="Opened")].message}'`, FormWindow))
	d.say("%s: %s", held.Reason, held.Message)
	return d.getWindows(ctx)
}

// acknowledge closes the popup (disposition Close): the held form opens.
func (d *demo) acknowledge(ctx context.Context) error {
	d.header("Acknowledge: keep it, or close it",
		"The user (or the agent, following the hint) says what the compose window is: Close closes it now, Keep makes it a deliverable that outlives the session.")
	compose, err := d.spawned(ctx)
	if err != nil || compose == nil {
		return fmt.Errorf("the compose window: %v", err)
	}
	d.run(hint.Ack(d.ns, compose.Name, twv1.DispositionClose))
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"disposition":"Close"}}`))
	if err := d.k8s.Patch(ctx, compose, patch); err != nil {
		return fmt.Errorf("acknowledging %s: %w", compose.Name, err)
	}
	d.say("browserwindow.tabwarden.dev/%s patched", compose.Name)
	form := &twv1.BrowserWindow{}
	if err := d.waitFor(ctx, "the compose window to close and the form to open", func() (bool, error) {
		if err := d.k8s.Get(ctx, client.ObjectKeyFromObject(compose), compose); err != nil {
			return false, err
		}
		err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: FormWindow}, form)
		return err == nil && compose.Status.Phase == twv1.WindowClosed && form.Status.Phase == twv1.WindowOpen, err
	}); err != nil {
		return err
	}
	d.note("the compose popup is closed, and the held form opened")
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	if err := d.browserPages(ctx); err != nil {
		return err
	}
	return d.getSessions(ctx)
}

// finish finishes the session and waits until every page it owned left the
// browser.
func (d *demo) finish(ctx context.Context) error {
	d.header("The agent finishes its session",
		"Every page the session owns closes (Keep pages would be released, bound user tabs detached). The user's own pages are never touched.")
	owned, err := d.ownedPaths(ctx)
	if err != nil {
		return err
	}
	s := &twv1.BrowserSession{}
	s.Namespace, s.Name = d.ns, SessionName
	d.run(fmt.Sprintf(`kubectl patch browsersession %s --type=merge -p '{"spec":{"state":"Finished"}}'`, SessionName))
	if err := d.k8s.Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"state":"Finished"}}`))); err != nil {
		return fmt.Errorf("finishing the session: %w", err)
	}
	d.say("browsersession.tabwarden.dev/%s patched", SessionName)
	d.run(fmt.Sprintf(`kubectl wait --for=jsonpath='{.status.phase}'=Finished browsersession/%s`, SessionName))
	if err := d.waitFor(ctx, "the session to finish and clean up", func() (bool, error) {
		err := d.k8s.Get(ctx, client.ObjectKeyFromObject(s), s)
		return err == nil && s.Status.Phase == twv1.SessionPhaseFinished, err
	}); err != nil {
		return err
	}
	d.say("browsersession.tabwarden.dev/%s condition met", SessionName)
	if err := d.getSessions(ctx); err != nil {
		return err
	}
	if err := d.getWindows(ctx); err != nil {
		return err
	}
	// The site hears a page go when the browser drops its stream, a moment
	// after the page closed.
	if err := d.waitFor(ctx, "the session's pages to leave the browser", func() (bool, error) {
		pages, err := d.pageList(ctx)
		for _, p := range pages {
			if owned[p.Path] && p.Path != UserPage {
				return false, err
			}
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	return d.browserPages(ctx)
}

// metrics prints the metrics that counted the incident (when up serves them).
func (d *demo) metrics(ctx context.Context) error {
	if d.info.MetricsURL == "" {
		return nil
	}
	d.header("What an operator sees", "tabwarden's Prometheus metrics (docs/metrics.md) counted all of it.")
	d.run(fmt.Sprintf("curl -s %s | grep -E '^tabwarden_(spawns_adopted_total|unacknowledged_spawns|action_results_total|session_cleanup_duration_seconds_count)'", d.info.MetricsURL))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.info.MetricsURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", d.info.MetricsURL, err)
	}
	defer func() { _ = resp.Body.Close() }() // the body is read; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(body), "\n") {
		for _, p := range []string{"tabwarden_spawns_adopted_total", "tabwarden_unacknowledged_spawns", "tabwarden_action_results_total", "tabwarden_session_cleanup_duration_seconds_count"} {
			if strings.HasPrefix(l, p) {
				d.say("%s", l)
			}
		}
	}
	return nil
}
