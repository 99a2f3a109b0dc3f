package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// ActRequest is one BrowserAction to run.
type ActRequest struct {
	Session, Window, Thread string
	// Profile, when set, must be the session's (profile_mismatch otherwise).
	Profile string
	Steps   []twv1.ActionStep
}

// Act creates a BrowserAction and waits (up to timeout) until it finished. A
// Refused action comes back with a Refused *Error (reason, message, hint), a
// Failed one with a Failed *Error; the action is returned in both cases.
func (o *Ops) Act(ctx context.Context, req ActRequest, timeout time.Duration) (*twv1.BrowserAction, error) {
	if len(req.Steps) == 0 {
		return nil, &Error{Kind: Invalid, Message: "no steps: give at least one, for example an Observe step",
			Hint: fmt.Sprintf("%s act %s --window %s --thread %s --observe%s", o.cmd(), orUpper(req.Session, "SESSION"), orUpper(req.Window, "WINDOW"), orUpper(req.Thread, "THREAD"), o.nsFlag())}
	}
	if req.Thread == "" {
		return nil, &Error{Kind: Invalid, Reason: twv1.ReasonSessionOwnedByAnotherThread,
			Message: "an action names the thread that calls; it must be the session's spec.thread",
			Hint:    fmt.Sprintf("%s act %s --window %s --thread <the session's thread> ...%s", o.cmd(), req.Session, orUpper(req.Window, "WINDOW"), o.nsFlag())}
	}
	if req.Window == "" {
		return nil, &Error{Kind: Invalid, Reason: twv1.ReasonWindowNotInSession,
			Message: "an action names the window whose page it drives",
			Hint:    fmt.Sprintf("%s owned %s%s   (lists the session's windows)", o.cmd(), req.Session, o.nsFlag())}
	}
	a := &twv1.BrowserAction{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, GenerateName: req.Session + "-"},
		Spec: twv1.BrowserActionSpec{
			SessionRef:  twv1.SessionReference{Name: req.Session},
			Thread:      req.Thread,
			WindowRef:   twv1.ActionWindowReference{Name: req.Window},
			ProfileName: req.Profile,
			Steps:       req.Steps,
		},
	}
	if err := o.Client.Create(ctx, a); err != nil {
		return nil, o.apiError(err, "creating BrowserAction")
	}
	err := o.wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := o.Client.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
			return false, err
		}
		return a.Status.Phase.Finished(), nil
	})
	if errors.Is(err, errTimeout) {
		return a, &Error{Kind: Failed, Reason: "action_timeout",
			Message: fmt.Sprintf("BrowserAction %s did not finish within %s (phase %q); is the agent of the session's profile running?", a.Name, timeout, orUpper(string(a.Status.Phase), "none yet")),
			Hint:    fmt.Sprintf("kubectl get browseraction %s%s -o yaml; %s profiles", a.Name, o.nsFlag(), o.cmd())}
	}
	if err != nil {
		return a, err
	}
	return a, ActionError(a)
}

// ActionError is the *Error of a Refused or Failed action, nil otherwise.
func ActionError(a *twv1.BrowserAction) error {
	switch a.Status.Phase {
	case twv1.ActionRefused:
		return &Error{Kind: Refused, Reason: a.Status.Reason, Message: a.Status.Message, Hint: a.Status.Hint}
	case twv1.ActionFailed:
		return &Error{Kind: Failed, Reason: a.Status.Reason, Message: a.Status.Message, Hint: a.Status.Hint}
	}
	return nil
}

func orUpper(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ParseSteps reads steps from YAML or JSON: a list of steps, or an object with a
// steps list (a BrowserAction's spec). Unknown fields are errors.
func ParseSteps(data []byte) ([]twv1.ActionStep, error) {
	trimmed := strings.TrimSpace(string(data))
	var steps []twv1.ActionStep
	if strings.HasPrefix(trimmed, "-") || strings.HasPrefix(trimmed, "[") {
		if err := yaml.UnmarshalStrict(data, &steps); err != nil {
			return nil, stepsError(err)
		}
	} else {
		var doc struct {
			Steps []twv1.ActionStep `json:"steps"`
		}
		if err := yaml.UnmarshalStrict(data, &doc); err != nil {
			return nil, stepsError(err)
		}
		steps = doc.Steps
	}
	if len(steps) == 0 {
		return nil, stepsError(errors.New("no steps"))
	}
	return steps, nil
}

func stepsError(err error) error {
	return &Error{Kind: Invalid, Message: "reading steps: " + err.Error(),
		Hint: "a steps file is a YAML list, for example:\n" +
			"- {type: Observe}\n- {type: Click, target: {ref: o1.e3}}\n- {type: Type, target: {text: Name}, text: Ada}\n- {type: Press, key: Enter}\n- {type: Wait, text: Saved}"}
}

// CreatedByHint reads the object a hint creates (echo '<json>' | kubectl create
// -f -, as internal/clients/hint writes them): its kind and its JSON; "" for any other hint.
func CreatedByHint(h string) (kind string, body []byte) {
	b, ok := strings.CutPrefix(h, "echo '")
	if !ok {
		return "", nil
	}
	b, ok = strings.CutSuffix(b, "' | kubectl create -f -")
	if !ok {
		return "", nil
	}
	body = []byte(strings.ReplaceAll(b, `'\''`, "'"))
	var tm metav1.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil {
		return "", nil
	}
	return tm.Kind, body
}

// ActionOfHint reads the BrowserAction of a hint that creates one, nil for any other hint.
func ActionOfHint(h string) *twv1.BrowserAction {
	kind, body := CreatedByHint(h)
	var a twv1.BrowserAction
	if kind != "BrowserAction" || json.Unmarshal(body, &a) != nil {
		return nil
	}
	return &a
}

// ActCommand is the `act` command line that does what action a would, when its
// steps are one the flags can say; "" otherwise.
func ActCommand(cmd, namespace string, a *twv1.BrowserAction) string {
	sp := a.Spec
	if len(sp.Steps) != 1 {
		return ""
	}
	st := sp.Steps[0]
	var flag string
	switch {
	case st.Type == twv1.StepObserve:
		flag = "--observe"
	case st.Type == twv1.StepClick && st.Target != nil && st.Target.Ref != "":
		flag = "--click-ref " + st.Target.Ref
	case st.Type == twv1.StepClick && st.Target != nil && st.Target.Text != "":
		flag = "--click-text " + shellQuote(st.Target.Text)
	case st.Type == twv1.StepClick && st.Target != nil && st.Target.X != nil && st.Target.Y != nil:
		flag = fmt.Sprintf("--click-point %d,%d --observation %s", *st.Target.X, *st.Target.Y, st.Target.Observation)
	default:
		return ""
	}
	return fmt.Sprintf("%s act %s --window %s --thread %s %s -n %s", cmd, sp.SessionRef.Name, sp.WindowRef.Name, shellQuote(sp.Thread), flag, namespace)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.@/:,=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
