package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// What the demo prints as a user at a terminal would see it: the commands
// they run and kubectl's output.

// header starts the next step: its number, title and why it matters.
func (d *demo) header(title, why string) {
	d.step++
	fmt.Fprintf(d.out, "\n── %d. %s\n", d.step, title)
	fmt.Fprintf(d.out, "   %s\n\n", why)
}

// run prints a command the user would run.
func (d *demo) run(cmd string) { fmt.Fprintf(d.out, "$ %s\n", cmd) }

// say prints what the user would see.
func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// note prints a comment.
func (d *demo) note(format string, args ...any) { fmt.Fprintf(d.out, "# "+format+"\n", args...) }

// apply prints the kubectl apply of obj.
func (d *demo) apply(obj client.Object) {
	c := obj.DeepCopyObject().(client.Object)
	c.SetNamespace("")
	b, _ := yaml.Marshal(c)
	// Only what the user writes: no status, no empty metadata.
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	b, _ = yaml.Marshal(m)
	d.run("kubectl apply -f - <<EOF")
	fmt.Fprintf(d.out, "%sEOF\n", b)
	kind := strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind)
	d.say("%s.tabwarden.dev/%s created", kind, obj.GetName())
}

// getSessions prints `kubectl get browsersessions` (the CRD's printer columns).
func (d *demo) getSessions(ctx context.Context) error {
	s := &twv1.BrowserSession{}
	if err := d.k8s.Get(ctx, client.ObjectKey{Namespace: d.ns, Name: SessionName}, s); err != nil {
		return err
	}
	if err := d.get(ctx, "browsersessions", SessionName, ""); err != nil {
		return err
	}
	if c := apimeta.FindStatusCondition(s.Status.Conditions, twv1.ReadyCondition); c != nil {
		d.run(fmt.Sprintf(`kubectl get browsersession %s -o jsonpath='{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}'`, SessionName))
		d.say("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return nil
}

// getWindows prints `kubectl get browserwindows -l tabwarden.dev/session=…`.
func (d *demo) getWindows(ctx context.Context) error {
	return d.get(ctx, "browserwindows", "", twv1.SessionLabel+"="+SessionName)
}

// get prints what `kubectl get <resource> [name] [-l selector]` prints: the
// API server's own table (the CRD's printer columns, server-side printing),
// rendered by kubectl's table printer, so the demo shows exactly what a user
// running the command sees.
func (d *demo) get(ctx context.Context, resource, name, selector string) error {
	cmd := "kubectl get " + resource
	if name != "" {
		cmd += " " + name
	}
	if selector != "" {
		cmd += " -l " + selector
	}
	d.run(cmd)
	hc, err := rest.HTTPClientFor(d.cfg)
	if err != nil {
		return err
	}
	u := fmt.Sprintf("%s/apis/%s/namespaces/%s/%s", strings.TrimSuffix(d.cfg.Host, "/"), twv1.GroupVersion.String(), d.ns, resource)
	if name != "" {
		u += "/" + name
	}
	if selector != "" {
		u += "?labelSelector=" + url.QueryEscape(selector)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer func() { _ = resp.Body.Close() }() // read below; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", cmd, resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if len(table.Rows) == 0 {
		d.say("No resources found in %s namespace.", d.ns)
		return nil
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(&table, d.out)
}
