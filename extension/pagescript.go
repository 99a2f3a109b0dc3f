// Package pagescript embeds the page script (page.js) that both drivers run in an
// isolated world of a page to observe it and locate targets. It is one expression
// whose value is the page function, called only as (Source)(op, args) with JSON
// data; see page.js.
package pagescript

import _ "embed"

// Source is page.js: one expression whose value is the page function
// (globalThis.tabwardenPage = function tabwardenPage(op, args) {...}).
//
//go:embed page.js
var Source string
