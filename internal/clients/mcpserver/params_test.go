package mcpserver

import "testing"

// TestParamNames: the API's field paths in a refusal's message (the API
// server's validation, the CRDs' rules, the controller's and the guards'
// messages) reach the model as the tool parameters that set them.
func TestParamNames(t *testing.T) {
	for in, want := range map[string]string{
		// start_session
		`spec: Invalid value: "object": set exactly one of spec.profileName (pin a profile, for example profileName: local) or spec.profileSelector (let the controller place the session on a matching connected profile)`: `spec: Invalid value: "object": set exactly one of profile (pin a profile, for example profile: local) or selector (let the controller place the session on a matching connected profile)`,
		`No connected BrowserProfile with free capacity that admits namespace "a" matches spec.profileSelector; see ..., or pin one with spec.profileName`:                                                                  `No connected BrowserProfile with free capacity that admits namespace "a" matches selector; see ..., or pin one with profile`,
		`it is abandoned if it stops renewing for 15m0s (spec.abandonAfter)`: `it is abandoned if it stops renewing for 15m0s (abandon_after)`,
		// open_window
		`spec.url: Invalid value: "ftp://x": url must be http(s) or about:blank`: `url: Invalid value: "ftp://x": url must be http(s) or about:blank`,
		`metadata.name: Invalid value: "Next": a lowercase RFC 1123 subdomain`:   `name: Invalid value: "Next": a lowercase RFC 1123 subdomain`,
		`the profile does not allow it (spec.urlPolicy)`:                         `the profile does not allow it (spec.urlPolicy)`,
		// act
		`an action names the thread that calls; it must be the session's spec.thread`:                                                                                                                                               `an action names the thread that calls; it must be the session's thread`,
		`spec.steps[0].target.ref: Invalid value: "zz": spec.steps[0].target.ref in body should match '^o[0-9]+\.e[0-9]+$'`:                                                                                                         `steps[0].ref: Invalid value: "zz": steps[0].ref in body should match '^o[0-9]+\.e[0-9]+$'`,
		`spec.steps[2].target.text: Invalid value: "": spec.steps[2].target.text in body should be at least 1 chars long`:                                                                                                           `steps[2].target_text: Invalid value: "": steps[2].target_text in body should be at least 1 chars long`,
		`spec.steps[1].target: Invalid value: "object": a target is exactly one of ref (from an Observe step, e.g. {ref: o3.e12}), text (the element's visible text, e.g. {text: "Send"}) or a point`:                               `steps[1]: Invalid value: "object": a target is exactly one of ref (from an Observe step, e.g. {ref: o3.e12}), target_text (the element's visible text, e.g. {target_text: "Send"}) or a point`,
		`spec.steps[0]: Invalid value: "object": a Click step needs a target, for example {type: Click, target: {ref: o3.e12}} or {type: Click, target: {text: "Send"}}`:                                                            `steps[0]: Invalid value: "object": a Click step needs a target, for example {type: Click, ref: o3.e12} or {type: Click, target_text: "Send"}`,
		`spec.steps[0]: Invalid value: "object": a Hover step needs a target, for example {type: Hover, target: {ref: o3.e7}} or {type: Hover, target: {text: "Menu"}}`:                                                             `steps[0]: Invalid value: "object": a Hover step needs a target, for example {type: Hover, ref: o3.e7} or {type: Hover, target_text: "Menu"}`,
		`spec.steps[0]: Invalid value: "object": a Select step needs a target (the drop-down) and text (the option's label or value), for example {type: Select, target: {ref: o3.e5}, text: "Canada"}`:                             `steps[0]: Invalid value: "object": a Select step needs a target (the drop-down) and text (the option's label or value), for example {type: Select, ref: o3.e5, text: "Canada"}`,
		`spec.steps[0]: Invalid value: "object": a Fill step needs fields, each a target and its text, for example {type: Fill, fields: [{target: {ref: o3.e4}, text: "Ada"}, {target: {text: "Email"}, text: "ada@example.com"}]}`: `steps[0]: Invalid value: "object": a Fill step needs fields, each a target and its text, for example {type: Fill, ref: o3.e4, text: "Ada"}, {type: Fill, target_text: "Email", text: "ada@example.com"}`,
		`spec.steps[1].fields[2].target.text: Invalid value: "": spec.steps[1].fields[2].target.text in body should be at least 1 chars long`:                                                                                       `steps[1].fields[2].target_text: Invalid value: "": steps[1].fields[2].target_text in body should be at least 1 chars long`,
		`spec.steps[0].fields[1].target: Required value`:                                                                          `steps[0].fields[1]: Required value`,
		`a Scroll step needs deltaY (or deltaX) in pixels, for example {type: Scroll, deltaY: 600}`:                               `a Scroll step needs delta_y (or delta_x) in pixels, for example {type: Scroll, delta_y: 600}`,
		`a Wait step needs text to wait for or a duration, for example {type: Wait, text: "Saved"} or {type: Wait, duration: 2s}`: `a Wait step needs text to wait for or a duration, for example {type: Wait, text: "Saved"} or {type: Wait, duration: 2s}`,
		`spec.steps: Too many: 33: must have at most 32 items`:                                                                    `steps: Too many: 33: must have at most 32 items`,
	} {
		if got := paramNames(in); got != want {
			t.Errorf("paramNames(%s)\n = %s\nwant %s", in, got, want)
		}
	}
}
