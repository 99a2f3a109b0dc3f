package fake

import (
	"fmt"
	"slices"

	"github.com/tabwarden/tabwarden/internal/browser"
)

// Hovered returns the name of the element a hover step last moved the pointer
// over on a page ("" for none).
func (b *Browser) Hovered(page string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		return t.hovered
	}
	return ""
}

// Selected returns the option a select step chose in the drop-down named name
// on a page ("" for none).
func (b *Browser) Selected(page, name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		return t.selected[name]
	}
	return ""
}

// selectLocked chooses step.Text in the drop-down step.Target names, refusing
// as the real drivers do.
func (b *Browser) selectLocked(t *tab, step browser.Step) error {
	tg := step.Target
	if tg.Selector != "" {
		tg = browser.Target{Text: tg.Selector}
	}
	if tg == (browser.Target{}) || step.Text == "" {
		return fmt.Errorf("act: a select needs a target and Text (the option)")
	}
	idx, err := b.locateLocked(t, tg)
	if err != nil {
		return err
	}
	e := b.sites[t.url][idx]
	if e.Options == nil {
		return &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("%s %q is not a drop-down (<select>)", e.Role, e.Name)}
	}
	if !slices.Contains(e.Options, step.Text) {
		return &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("the drop-down has no option labelled or valued %q; it offers %q", step.Text, e.Options)}
	}
	if t.selected == nil {
		t.selected = map[string]string{}
	}
	t.selected[e.Name] = step.Text
	return nil
}
