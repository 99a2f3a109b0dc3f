package fake

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
