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

// Filled returns the text a fill step left in the text field named name on a
// page ("" for none).
func (b *Browser) Filled(page, name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		return t.filled[name]
	}
	return ""
}

// fillLocked fills step.Fields: every target is located and checked to be a
// text field first, and a refusal names the field and fills none, as the real
// drivers do.
func (b *Browser) fillLocked(t *tab, step browser.Step) error {
	if len(step.Fields) == 0 {
		return fmt.Errorf("act: a fill needs Fields, each a target and its text")
	}
	names := make([]string, len(step.Fields))
	for i, f := range step.Fields {
		tg := f.Target
		if tg.Selector != "" {
			tg = browser.Target{Text: tg.Selector}
		}
		if tg == (browser.Target{}) || f.Text == "" {
			return fmt.Errorf("act: field %d of a fill needs a target and Text", i)
		}
		idx, err := b.locateLocked(t, tg)
		if err != nil {
			return browser.FieldError(i, err, browser.FilledBefore(0))
		}
		e := b.sites[t.url][idx]
		if e.Role != "textbox" && e.Role != "searchbox" {
			return &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("field %d: %s %q is not a text field; no field was filled", i, e.Role, e.Name)}
		}
		names[i] = e.Name
	}
	if t.filled == nil {
		t.filled = map[string]string{}
	}
	for i, f := range step.Fields {
		t.filled[names[i]] = f.Text
	}
	return nil
}

// Uploaded returns the names of the files an upload step put into the file
// input named name on a page (nil for none).
func (b *Browser) Uploaded(page, name string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tabs[page]; ok {
		return slices.Clone(t.uploaded[name])
	}
	return nil
}

// uploadLocked puts step.Files into the file input step.Target names,
// refusing as the real drivers do.
func (b *Browser) uploadLocked(t *tab, step browser.Step) error {
	tg := step.Target
	if tg.Selector != "" {
		tg = browser.Target{Text: tg.Selector}
	}
	if err := browser.ValidUpload(browser.Step{Target: tg, Files: step.Files}); err != nil {
		return err
	}
	idx, err := b.locateLocked(t, tg)
	if err != nil {
		return err
	}
	e := b.sites[t.url][idx]
	if !e.File {
		return &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("%s %q is not a file input: target the <input type=file>, its label, or the element holding it", e.Role, e.Name)}
	}
	if len(step.Files) > 1 && !e.Multiple {
		return &browser.ActError{Reason: "target_not_found", Message: fmt.Sprintf("the file input takes one file (it has no multiple attribute), not %d: upload one", len(step.Files))}
	}
	if t.uploaded == nil {
		t.uploaded = map[string][]string{}
	}
	names := make([]string, len(step.Files))
	for i, f := range step.Files {
		names[i] = f.Name
	}
	t.uploaded[e.Name] = names
	return nil
}
