package ops

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// Table options shared by the renderers.
type Table struct {
	// Wide adds columns (window ids, profile, agent, full urls).
	Wide bool
	// Now is the clock ages are computed against.
	Now time.Time
	// Command and Namespace spell the hints ("kubectl tabwarden", "-n ns").
	Command, Namespace string
	// NoRefusal leaves the reason, message and hint of a refused or failed
	// action out of WriteAction (the caller shows them itself).
	NoRefusal bool
}

func (t Table) writer(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0) }

func (t Table) age(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(t.Now.Sub(ts.Time))
}

func (t Table) cut(s string, n int) string {
	if s == "" {
		return "-"
	}
	if t.Wide || len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// windowURL is the page's url, else the one asked for or spawned with.
func windowURL(w *twv1.BrowserWindow) string {
	switch {
	case w.Status.URL != "":
		return w.Status.URL
	case w.Spec.Spawn != nil && w.Spec.Spawn.URL != "":
		return w.Spec.Spawn.URL
	}
	return w.Spec.URL
}

func disposition(w *twv1.BrowserWindow) string {
	switch {
	case w.Unacknowledged():
		return "<none>*"
	case w.Spec.Disposition == "" && w.Spec.Source == twv1.SourceBind:
		return "-"
	case w.Spec.Disposition == "":
		return string(twv1.DispositionTemporary)
	}
	return string(w.Spec.Disposition)
}

// WriteOwned writes what a session owns: a header line, then its windows in
// three groups (opened, spawned, bound), unacknowledged spawns marked with *
// and followed by the command that acknowledges them.
func (t Table) WriteOwned(out io.Writer, s *twv1.BrowserSession, ws []twv1.BrowserWindow) error {
	fmt.Fprintf(out, "Session %s  thread=%s  profile=%s  phase=%s\n", s.Name, s.Spec.Thread, dash(s.Status.ProfileName), dash(string(s.Status.Phase)))
	fmt.Fprintf(out, "Purpose: %s\n", s.Spec.Purpose)
	if s.Status.Holder != "" || s.Spec.AbandonAfter != nil || s.Abandoned() {
		renewed := "never"
		if s.Status.LastRenewal != nil {
			renewed = t.age(*s.Status.LastRenewal) + " ago"
		}
		after := "never"
		if s.Spec.AbandonAfter != nil && s.Spec.AbandonAfter.Duration > 0 {
			after = s.Spec.AbandonAfter.Duration.String()
		}
		fmt.Fprintf(out, "Holder: %s  renewed=%s  abandonAfter=%s", dash(s.Status.Holder), renewed, after)
		if s.Abandoned() {
			fmt.Fprintf(out, "  ended=%s", twv1.ReasonAbandoned)
		}
		fmt.Fprintln(out)
	}
	groups := []struct {
		title  string
		source twv1.WindowSource
	}{{"Opened", twv1.SourceOpen}, {"Spawned", twv1.SourceSpawned}, {"Bound", twv1.SourceBind}}
	var unacked []string
	for _, g := range groups {
		var rows []*twv1.BrowserWindow
		for i := range ws {
			if ws[i].Spec.Source == g.source {
				rows = append(rows, &ws[i])
			}
		}
		fmt.Fprintf(out, "\n%s (%d)\n", g.title, len(rows))
		if len(rows) == 0 {
			continue
		}
		tw := t.writer(out)
		head := []string{"WINDOW", "TAB", "URL", "TITLE"}
		if g.source == twv1.SourceSpawned {
			head = append(head, "SPAWNED-BY", "OPENER", "REASON")
		}
		head = append(head, "DISPOSITION", "PHASE", "AGE")
		if t.Wide {
			head = append(head, "BROWSER-WINDOW", "PROFILE")
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, w := range rows {
			name := w.Name
			if w.Unacknowledged() {
				name += "*"
				unacked = append(unacked, w.Name)
			}
			tab := w.Status.TabID
			if tab == "" && w.Spec.Spawn != nil {
				tab = w.Spec.Spawn.TabID
			}
			if tab == "" {
				tab = w.Spec.BindTabID
			}
			row := []string{name, dash(tab), t.cut(windowURL(w), 48), t.cut(w.Status.Title, 32)}
			if g.source == twv1.SourceSpawned {
				var by, opener, reason string
				if sp := w.Spec.Spawn; sp != nil {
					by, opener, reason = sp.SpawnedBy, sp.OpenerTabID, sp.Reason
				}
				row = append(row, dash(by), dash(opener), dash(reason))
			}
			row = append(row, disposition(w), dash(string(w.Status.Phase)), t.age(w.CreationTimestamp))
			if t.Wide {
				row = append(row, dash(w.Status.WindowID), dash(w.Status.ProfileName))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(unacked) > 0 {
		fmt.Fprintf(out, "\n* %d spawned window(s) have no disposition: the session's actions are refused and new windows held (unacknowledged_spawns) until each is acknowledged:\n", len(unacked))
		fmt.Fprintf(out, "    %s ack %s close -n %s        (or keep, temporary)\n", t.Command, strings.Join(unacked, " "), t.Namespace)
		fmt.Fprintf(out, "    %s ack --all-unacked %s close -n %s\n", t.Command, s.Name, t.Namespace)
	}
	return nil
}

// WriteProfiles writes the profiles: connected, driver, sessions/capacity, tabs
// and the namespaces each admits.
func (t Table) WriteProfiles(out io.Writer, ps []twv1.BrowserProfile) error {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	tw := t.writer(out)
	head := []string{"NAME", "CONNECTED", "DRIVER", "SESSIONS", "TABS", "NAMESPACES", "AGE"}
	if t.Wide {
		head = append(head, "AGENT", "BROWSER", "REASON")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for i := range ps {
		p := &ps[i]
		connected, reason := "Unknown", "-"
		if c := meta.FindStatusCondition(p.Status.Conditions, twv1.ConnectedCondition); c != nil {
			connected, reason = string(c.Status), c.Reason
		}
		capacity := "unlimited"
		if p.Spec.MaxSessions > 0 {
			capacity = strconv.Itoa(int(p.Spec.MaxSessions))
		}
		row := []string{p.Name, connected, dash(string(p.Spec.Driver)),
			fmt.Sprintf("%d/%s", p.Status.Sessions, capacity), strconv.Itoa(int(p.Status.TabCount)),
			admitted(p), t.age(p.CreationTimestamp)}
		if t.Wide {
			row = append(row, dash(p.Status.Agent), dash(p.Status.BrowserVersion), reason)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// admitted says which namespaces a profile admits.
func admitted(p *twv1.BrowserProfile) string {
	var parts []string
	if len(p.Spec.Namespaces) > 0 {
		parts = append(parts, strings.Join(p.Spec.Namespaces, ","))
	}
	if sel := p.Spec.NamespaceSelector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		switch {
		case err != nil:
			parts = append(parts, "invalid selector")
		case s.Empty():
			return "all"
		default:
			parts = append(parts, "selector "+s.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " + ")
}

// WriteAction writes an action's result: phase, each step, the last
// observation's elements with their refs, spawned windows (with the command that
// acknowledges them) and warnings; a refusal's reason, message and hint.
func (t Table) WriteAction(out io.Writer, a *twv1.BrowserAction) error {
	st := &a.Status
	fmt.Fprintf(out, "BrowserAction %s: %s", a.Name, dash(string(st.Phase)))
	if st.Reason != "" {
		fmt.Fprintf(out, " (%s)", st.Reason)
	}
	fmt.Fprintln(out)
	for _, s := range st.Steps {
		fmt.Fprintf(out, "  step %d %s: %s", s.Index, s.Type, s.Phase)
		if s.Reason != "" {
			fmt.Fprintf(out, " (%s)", s.Reason)
		}
		if s.Message != "" {
			fmt.Fprintf(out, ": %s", s.Message)
		}
		fmt.Fprintln(out)
		if len(s.Candidates) > 0 {
			fmt.Fprintln(out, "    candidates:")
			if err := t.writeElements(indent(out, "    "), s.Candidates); err != nil {
				return err
			}
		}
	}
	if (st.Phase == twv1.ActionRefused || st.Phase == twv1.ActionFailed) && !t.NoRefusal {
		fmt.Fprintf(out, "reason:  %s\nmessage: %s\n", dash(st.Reason), dash(st.Message))
		if st.Hint != "" {
			fmt.Fprintf(out, "hint:    %s\n", st.Hint)
			if a := ActionOfHint(st.Hint); a != nil {
				if c := ActCommand(t.Command, t.Namespace, a); c != "" {
					fmt.Fprintf(out, "   or:  %s\n", c)
				}
			}
		}
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	if o := st.Observation; o != nil {
		fmt.Fprintf(out, "\nObservation %s: %s  %q  scroll=%d,%d\n", o.ID, o.URL, o.Title, o.ScrollX, o.ScrollY)
		if err := t.writeElements(out, o.Elements); err != nil {
			return err
		}
		if o.Truncated {
			fmt.Fprintln(out, "(more elements than listed: scroll and observe again)")
		}
		if ol := o.Outline; ol != nil {
			fmt.Fprintf(out, "\nOutline, lines %d-%d:\n%s", ol.Offset, ol.Offset+ol.Lines, ol.Text)
			if ol.Truncated && ol.NextOffset != nil {
				fmt.Fprintf(out, "(the outline goes on: observe with outline offset %d)\n", *ol.NextOffset)
			}
		}
	}
	if len(st.Spawned) > 0 {
		names := make([]string, 0, len(st.Spawned))
		fmt.Fprintf(out, "\nSpawned %d window(s); acknowledge before the next mutating step:\n", len(st.Spawned))
		for _, s := range st.Spawned {
			fmt.Fprintf(out, "  %s  %s\n", s.Name, dash(s.URL))
			names = append(names, s.Name)
		}
		fmt.Fprintf(out, "  %s ack %s close -n %s   (or keep, temporary)\n", t.Command, strings.Join(names, " "), t.Namespace)
	}
	return nil
}

func (t Table) writeElements(out io.Writer, els []twv1.ObservedElement) error {
	tw := t.writer(out)
	fmt.Fprintln(tw, "REF\tROLE\tNAME\tX\tY\tW\tH")
	for _, e := range els {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", e.Ref, dash(e.Role), t.cut(e.Name, 48), e.X, e.Y, e.Width, e.Height)
	}
	return tw.Flush()
}

type indenter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func indent(w io.Writer, prefix string) io.Writer { return &indenter{w: w, prefix: prefix, bol: true} }

func (i *indenter) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if i.bol {
			b.WriteString(i.prefix)
		}
		b.WriteRune(c)
		i.bol = c == '\n'
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
