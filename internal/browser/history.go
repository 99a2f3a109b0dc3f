package browser

import "fmt"

// ReasonNoHistory is the ActError reason of a back (forward) step on a page with
// no earlier (later) entry in its history: nothing was loaded.
const ReasonNoHistory = "no_history"

// NoHistory is every driver's refusal of a back or forward step on a page at
// url whose history has no entry in that direction: it says what to do instead.
func NoHistory(kind StepKind, url string) *ActError {
	dir, what := "earlier", "back"
	if kind == StepForward {
		dir, what = "later", "forward"
	}
	return &ActError{Reason: ReasonNoHistory, Message: fmt.Sprintf(
		"the page (%s) has no %s entry in its history to go %s to; nothing was loaded. Navigate to the url you want instead", url, dir, what)}
}
