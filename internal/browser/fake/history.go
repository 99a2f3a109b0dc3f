package fake

import (
	"github.com/tabwarden/tabwarden/internal/browser"
)

// History: each tab keeps the urls before and after its current one, as a
// browser's back and forward buttons see them. A load (navigate, a click that
// navigates, Navigate) pushes the current url back and drops the forward ones.

// loadLocked loads url in t as a new history entry: a new document.
func (b *Browser) loadLocked(t *tab, url string) {
	t.back = append(t.back, t.url)
	t.forward = nil
	b.showLocked(t, url)
}

// showLocked makes url t's new document, without touching its history.
func (b *Browser) showLocked(t *tab, url string) {
	t.url, t.title = url, title(url)
	t.doc, t.epoch, t.scrollY = t.doc+1, 0, 0
	b.emit(browser.PageUpdated, b.page(t))
}

// historyLocked runs a back, forward or reload step on t.
func (b *Browser) historyLocked(t *tab, kind browser.StepKind) error {
	switch kind {
	case browser.StepReload:
		b.showLocked(t, t.url)
	case browser.StepBack:
		if len(t.back) == 0 {
			return noHistory(kind, t.url)
		}
		prev := t.back[len(t.back)-1]
		t.back = t.back[:len(t.back)-1]
		t.forward = append(t.forward, t.url)
		b.showLocked(t, prev)
	case browser.StepForward:
		if len(t.forward) == 0 {
			return noHistory(kind, t.url)
		}
		next := t.forward[len(t.forward)-1]
		t.forward = t.forward[:len(t.forward)-1]
		t.back = append(t.back, t.url)
		b.showLocked(t, next)
	}
	return nil
}

// noHistory is the refusal of a back (forward) step with no earlier (later)
// entry, as every driver words it.
func noHistory(kind browser.StepKind, url string) error { return browser.NoHistory(kind, url) }
