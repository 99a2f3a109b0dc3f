package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// observation is what the agent remembers of an Observe step, so that a later
// step's ref or point is bound to the session, the page and the document it was
// read from: a ref is never resolved against another document, page or session.
type observation struct {
	session types.UID
	// sessionGeneration is the session's generation when observed: a change of
	// the session's spec (waiting for the user and resuming) invalidates it, so
	// resuming needs a fresh observation.
	sessionGeneration int64
	page              string
	document          string
	epoch             int64
	at                time.Time
}

// observations is the agent's table of observations. Ids come from one counter
// per process that starts at the process's start time in microseconds (since
// 2026), so that an id from before a restart never names an observation made
// after it (that would take more than one observation per microsecond): refs
// of an unknown id are stale.
type observations struct {
	mu   sync.Mutex
	byID map[int64]observation
	// order keeps ids oldest first, for trimming.
	order []int64
}

// maxObservations bounds the table; the oldest observations go first.
const maxObservations = 4096

// observationEpoch is where observation ids count from (2026-01-01, in µs).
const observationEpoch = 1767225600000000

// observationIDs is the process's id counter.
var observationIDs atomic.Int64

func init() { observationIDs.Store(time.Now().UnixMicro() - observationEpoch) }

func newObservations() *observations {
	return &observations{byID: map[int64]observation{}}
}

// add remembers o and returns its id, e.g. "o3".
func (t *observations) add(o observation) string {
	id := observationIDs.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byID[id] = o
	t.order = append(t.order, id)
	for len(t.order) > maxObservations {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
	return "o" + strconv.FormatInt(id, 10)
}

// get returns the observation named id ("o3").
func (t *observations) get(id string) (observation, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "o"), 10, 64)
	if err != nil || !strings.HasPrefix(id, "o") {
		return observation{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.byID[n]
	return o, ok
}

// forgetSession drops every observation of a session.
func (t *observations) forgetSession(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, o := range t.byID {
		if o.session == uid {
			delete(t.byID, id)
		}
	}
}

// refPattern is a ref: its observation, the frame its element is in when that is
// not the page's own document (x<k>: a cross-origin or out-of-process frame the
// driver reaches; f<k>: a same-origin frame of the document the page script
// walks), and the element.
var refPattern = regexp.MustCompile(`^o[0-9]+\.(x[0-9]+\.)?(f[0-9]+\.)?e[0-9]+$`)

// splitRef splits a ref "o3.e12" (or "o3.f2.e12", an element of frame f2, or
// "o3.x1.e4", of cross-origin frame x1) into its observation id and element id
// ("e12", "f2.e12", "x1.e4": the driver's id).
func splitRef(ref string) (obs, element string, err error) {
	if !refPattern.MatchString(ref) {
		return "", "", fmt.Errorf("ref %q is not of the form o<observation>.e<element> (o<observation>.f<frame>.e<element> or o<observation>.x<frame>.e<element> in a frame), e.g. o3.e12", ref)
	}
	obs, element, _ = strings.Cut(ref, ".")
	return obs, element, nil
}

// resolve turns an API target into a driver target, checking that the
// observation it cites belongs to this session, page and session generation.
// A ref or point whose observation is unknown or belongs elsewhere is refused
// as stale (stale_ref, stale_coordinates); the driver then checks the document
// and, for points, the render epoch.
func (t *observations) resolve(ref, obsID string, point bool, x, y float64, session types.UID, generation int64, page string) (browser.Target, string, string) {
	var elem string
	if ref != "" {
		var err error
		if obsID, elem, err = splitRef(ref); err != nil {
			return browser.Target{}, "stale_ref", err.Error()
		}
	}
	reason := "stale_ref"
	what := "ref " + ref
	if point {
		reason, what = "stale_coordinates", fmt.Sprintf("point (%v, %v) of observation %s", x, y, obsID)
	}
	o, ok := t.get(obsID)
	switch {
	case !ok:
		return browser.Target{}, reason, fmt.Sprintf("%s: observation %s is unknown to this agent (it restarted, or the observation was never made here)", what, obsID)
	case o.session != session:
		return browser.Target{}, reason, fmt.Sprintf("%s: observation %s belongs to another session", what, obsID)
	case o.page != page:
		return browser.Target{}, reason, fmt.Sprintf("%s: observation %s was made on another page than this window's", what, obsID)
	case o.sessionGeneration != generation:
		return browser.Target{}, reason, fmt.Sprintf("%s: the session changed since observation %s (it waited for the user, or its spec was edited)", what, obsID)
	}
	if point {
		return browser.Target{Point: true, X: x, Y: y, Document: o.document, Epoch: o.epoch}, "", ""
	}
	return browser.Target{Ref: elem, Document: o.document}, "", ""
}
