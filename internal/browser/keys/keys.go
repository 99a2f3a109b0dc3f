// Package keys is tabwarden's one reading of a press step's key ("Enter",
// "Shift+Tab", "Mod+t"): the agent's focus guard and every driver (CDP, the
// fake, and the extension's step.js, which is held to the same table by
// testdata/keys.json) parse it here, so that what the guard refuses is exactly
// what a driver would press.
//
// A key is a name (Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown,
// ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space, F1–F12,
// BrowserBack, BrowserForward, BrowserHome) or one character, after any
// modifiers joined by "+": Shift, Control (Ctrl), Alt (Option), Meta (Cmd,
// Command) and Mod (Control, or Meta on a Mac). Modifier and key names are
// case-insensitive.
package keys

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Modifier bits, as Input.dispatchKeyEvent and chrome.debugger take them.
const (
	Alt     = 1
	Control = 2
	Meta    = 4
	Shift   = 8
)

// Chord is one key press: the DOM key and code, the Windows virtual key code,
// the text it types (none while Control, Alt or Meta is held: a shortcut) and
// the modifier bits.
type Chord struct {
	Key       string `json:"key"`
	Code      string `json:"code"`
	KeyCode   int    `json:"keyCode"`
	Text      string `json:"text"`
	Modifiers int    `json:"modifiers"`
}

// Named are the key names a press step may use, by their canonical spelling.
var Named = map[string]Chord{
	"Enter":          {Key: "Enter", Code: "Enter", KeyCode: 13, Text: "\r"},
	"Tab":            {Key: "Tab", Code: "Tab", KeyCode: 9},
	"Escape":         {Key: "Escape", Code: "Escape", KeyCode: 27},
	"Backspace":      {Key: "Backspace", Code: "Backspace", KeyCode: 8},
	"Delete":         {Key: "Delete", Code: "Delete", KeyCode: 46},
	"ArrowUp":        {Key: "ArrowUp", Code: "ArrowUp", KeyCode: 38},
	"ArrowDown":      {Key: "ArrowDown", Code: "ArrowDown", KeyCode: 40},
	"ArrowLeft":      {Key: "ArrowLeft", Code: "ArrowLeft", KeyCode: 37},
	"ArrowRight":     {Key: "ArrowRight", Code: "ArrowRight", KeyCode: 39},
	"Home":           {Key: "Home", Code: "Home", KeyCode: 36},
	"End":            {Key: "End", Code: "End", KeyCode: 35},
	"PageUp":         {Key: "PageUp", Code: "PageUp", KeyCode: 33},
	"PageDown":       {Key: "PageDown", Code: "PageDown", KeyCode: 34},
	"Space":          {Key: " ", Code: "Space", KeyCode: 32, Text: " "},
	"BrowserBack":    {Key: "BrowserBack", Code: "BrowserBack", KeyCode: 166},
	"BrowserForward": {Key: "BrowserForward", Code: "BrowserForward", KeyCode: 167},
	"BrowserHome":    {Key: "BrowserHome", Code: "BrowserHome", KeyCode: 172},
}

func init() {
	for i := 1; i <= 12; i++ {
		n := fmt.Sprintf("F%d", i)
		Named[n] = Chord{Key: n, Code: n, KeyCode: 111 + i}
	}
}

// modifiers by lower-case name; -1 is Mod.
var modifiers = map[string]int{
	"shift": Shift, "control": Control, "ctrl": Control, "alt": Alt, "option": Alt,
	"meta": Meta, "cmd": Meta, "command": Meta, "mod": -1,
}

// Usage is what a refusal teaches.
const Usage = "a key is a name (Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space, F1-F12) or one character, optionally after modifiers (Shift, Control/Ctrl, Alt/Option, Meta/Cmd, Mod = Control or Meta on a Mac): Shift+Tab, Control+a, Mod+Enter"

// Parse reads a press step's key; mac says whether Mod means Meta (a Mac) or
// Control. Its error names the key and shows the corrected call.
func Parse(s string, mac bool) (Chord, error) {
	bad := func(why string) (Chord, error) {
		return Chord{}, fmt.Errorf("press %q: %s; %s", s, why, Usage)
	}
	if s == "" {
		return bad("no key")
	}
	var parts []string
	switch {
	case s == "+":
		parts = []string{"+"}
	case strings.HasSuffix(s, "++"): // "Control++"
		parts = append(strings.Split(strings.TrimSuffix(s, "++"), "+"), "+")
	default:
		parts = strings.Split(s, "+")
	}
	name := parts[len(parts)-1]
	if name == "" {
		return bad("no key after the modifiers")
	}
	mods := 0
	for _, m := range parts[:len(parts)-1] {
		bit, ok := modifiers[strings.ToLower(m)]
		if !ok {
			return bad(fmt.Sprintf("unknown modifier %q: use Alt, Control, Meta or Shift (or Mod)", m))
		}
		if bit == -1 {
			bit = Control
			if mac {
				bit = Meta
			}
		}
		mods |= bit
	}
	c, ok := Named[name]
	if !ok {
		for n, nc := range Named {
			if strings.EqualFold(n, name) {
				c, ok = nc, true
				break
			}
		}
	}
	if !ok {
		if utf8.RuneCountInString(name) != 1 {
			return bad(fmt.Sprintf("unknown key name %q", name))
		}
		c = char(name, mods&Shift != 0)
	}
	c.Modifiers = mods
	if mods&(Control|Alt|Meta) != 0 {
		c.Text = "" // a shortcut types nothing
	}
	return c, nil
}

// char is the key press typing one character (US layout codes for letters and
// digits).
func char(ch string, shift bool) Chord {
	r, _ := utf8.DecodeRuneInString(ch)
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		upper := strings.ToUpper(ch)
		c := Chord{Key: ch, Code: "Key" + upper, KeyCode: int(upper[0]), Text: ch}
		if shift {
			c.Key, c.Text = upper, upper
		}
		return c
	case r >= '0' && r <= '9':
		return Chord{Key: ch, Code: "Digit" + ch, KeyCode: int(r), Text: ch}
	}
	return Chord{Key: ch, Text: ch}
}

// focusKeys are the keys (by DOM key, lower case for characters) that browsers
// take as shortcuts to open, close, switch or focus tabs and windows, by the
// modifier held.
var focusKeys = map[int][]string{
	Control: {"t", "n", "w", "Tab", "PageUp", "PageDown", "1", "2", "3", "4", "5", "6", "7", "8", "9", "l", "o", "j", "h", "d", "q"},
	Meta:    {"t", "n", "w", "Tab", "1", "2", "3", "4", "5", "6", "7", "8", "9", "l", "o", "q", "`", "m", "h"},
	Alt:     {"Tab", "F4", "ArrowLeft", "ArrowRight", "Home", "d", "e", "f"},
	0:       {"F6", "F11", "F12", "BrowserBack", "BrowserForward", "BrowserHome"},
}

// FocusShortcut reports whether s is a browser shortcut that opens, closes,
// switches or focuses a tab or window, on any platform (Mod is read both as
// Control and as Meta). A key that does not parse is no shortcut: every
// driver refuses it (Parse's error).
func FocusShortcut(s string) bool {
	for _, mac := range []bool{false, true} {
		c, err := Parse(s, mac)
		if err != nil {
			return false
		}
		if c.focus() {
			return true
		}
	}
	return false
}

func (c Chord) focus() bool {
	for _, mod := range []int{0, Control, Meta, Alt} {
		if mod != 0 && c.Modifiers&mod == 0 {
			continue
		}
		for _, f := range focusKeys[mod] {
			if strings.EqualFold(f, c.Key) {
				return true
			}
		}
	}
	return false
}
