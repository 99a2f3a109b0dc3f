// The page script's outline (extension/page.js observe): one walk of the document into nodes
// with role, name, text and, on interactive nodes, the same ids (refs) as the observation's
// elements; hidden subtrees left out; white space collapsed; a chunk from outlineOffset, bounded
// by outlineBytes, with outlineMore. Run here on a small DOM of plain objects (node has no DOM);
// on real pages in Chromium by the conformance case ObserveReadsTheOutline (cdp driver and the
// real extension). Also the worker's side: step.js takes outlineOffset and bounds what goes back.

import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { validateStep, observation } from "../step.js";

const source = readFileSync(new URL("../page.js", import.meta.url), "utf8");
const INLINE = new Set(["a", "b", "i", "em", "strong", "span", "button", "input", "label", "select", "textarea"]);

/** A tiny DOM: h(tag, attrs, ...children); attrs.style = {display, visibility, overflow, zero}. */
function h(tag, attrs = {}, ...children) {
  const { style = {}, value, disabled, ...plain } = attrs;
  const el = {
    nodeType: 1, localName: tag, attrs: plain, value, disabled: !!disabled, parentElement: null, isConnected: true,
    childNodes: children.map((c) => (typeof c === "string" ? { nodeType: 3, nodeValue: c } : c)),
    style: {
      display: style.display ?? (INLINE.has(tag) ? "inline" : tag === "li" ? "list-item" : "block"),
      visibility: style.visibility ?? "visible", overflow: style.overflow ?? "visible",
    },
    zero: !!style.zero,
    getAttribute(n) { return n in this.attrs ? String(this.attrs[n]) : null; },
    hasAttribute(n) { return n in this.attrs; },
    matches(sel) { return sel.split(",").some((s) => matchOne(this, s.trim())); },
    getBoundingClientRect() {
      const none = this.zero || this.style.display === "none";
      const w = none ? 0 : 100, hh = none ? 0 : 20;
      return { left: 0, top: 0, right: w, bottom: hh, width: w, height: hh };
    },
    checkVisibility() {
      for (let p = this; p; p = p.parentElement) if (p.style.display === "none") return false;
      return this.style.visibility === "visible";
    },
    get innerText() { return textOf(this); },
    get textContent() { return textOf(this); },
    querySelector() { return null; },
    get isContentEditable() { return false; },
  };
  for (const c of el.childNodes) c.parentElement = el;
  return el;
}

function textOf(n) {
  return n.nodeType === 3 ? n.nodeValue : n.childNodes.map(textOf).join("");
}

// matchOne matches the selector forms page.js uses: tag, [attr], [attr=value], :not([...]), :disabled.
function matchOne(el, sel) {
  if (sel === ":disabled") return el.disabled;
  const m = /^([a-z]*)(.*)$/.exec(sel);
  if (m[1] && el.localName !== m[1]) return false;
  const re = /(:not\()?\[([a-z-]+)(?:=([^\]]+))?\]\)?/g;
  let a;
  let any = !!m[1];
  while ((a = re.exec(m[2]))) {
    any = true;
    const has = el.attrs[a[2]] !== undefined && (a[3] === undefined || String(el.attrs[a[2]]) === a[3]);
    if (a[1] ? has : !has) return false;
  }
  return any;
}

function all(n, out = []) {
  if (n.nodeType === 1) {
    out.push(n);
    n.childNodes.forEach((c) => all(c, out));
  }
  return out;
}

/** The page function in a context whose document's body is body: returns observe(args). */
function pageWith(body) {
  const document = {
    body, documentElement: body, title: "Mail", readyState: "complete",
    querySelectorAll: (sel) => all(body).filter((el) => el.matches(sel)),
    getElementById: () => null,
  };
  const ctx = vm.createContext({
    document, location: { href: "https://mail.example/inbox" }, navigator: { platform: "Linux" },
    scrollX: 0, scrollY: 0, innerWidth: 1000, innerHeight: 800, Node: { ELEMENT_NODE: 1 },
    crypto: { getRandomValues: (a) => a.fill(7) },
    MutationObserver: class { observe() {} takeRecords() { return []; } disconnect() {} },
    addEventListener() {}, removeEventListener() {},
    getComputedStyle: (el) => el.style,
  });
  const fn = vm.runInContext(`(${source}\n)`, ctx);
  assert.ok(!fn("init", { world: "w" }).error);
  return (args = {}) => {
    const o = fn("observe", { world: "w", ...args });
    assert.ok(!o.error, JSON.stringify(o.error));
    return JSON.parse(JSON.stringify(o)); // this realm's arrays and objects

  };
}

const cell = (tag, text) => h(tag, { style: { display: "table-cell" } }, text);
const row = (...cells) => h("tr", { style: { display: "table-row" } }, ...cells);

function mail(older = 0) {
  const items = [];
  for (let i = 1; i <= older; i++) items.push(h("li", {}, `Older message ${i}`));
  return h("body", {},
    h("h1", {}, "  Inbox  "),
    h("main", {},
      h("h2", {}, "Quarterly", " report"),
      h("p", {}, "From: ", h("b", {}, "Ada"), "\n   Lovelace"),
      h("div", {}, h("p", {}, "The numbers", h("br"), "Regards")),
      h("table", {}, h("tbody", { style: { display: "table-row-group" } },
        row(cell("th", "Region"), cell("th", "Sales")),
        row(cell("td", "North"), cell("td", "1200")))),
      h("p", {}, h("button", { type: "button" }, "Archive"), " ", h("a", { href: "#reply" }, "Reply"),
        h("button", { type: "button", disabled: true }, "Send")),
      h("input", { "aria-label": "Search", value: "quarterly" }),
      h("input", { "aria-label": "Password", type: "password", value: "HIDDEN-pw" }),
      h("div", { style: { display: "none" } }, "HIDDEN-none", h("button", {}, "HIDDEN-button")),
      h("p", { style: { visibility: "hidden" } }, "HIDDEN-visibility", h("span", { style: { visibility: "visible" } }, "shown again")),
      h("p", { "aria-hidden": "true" }, "HIDDEN-aria"),
      h("div", { style: { zero: true, overflow: "hidden" } }, "HIDDEN-zero"),
      h("script", {}, "HIDDEN-script"),
      h("div", { role: "presentation" }, h("span", {}, "")),
      h("ul", {}, ...items)));
}

const line = (n) => `${"  ".repeat(n.depth)}${n.role}|${n.name}|${n.text}${n.id ? "|" + n.id : ""}${n.level ? "|L" + n.level : ""}${n.disabled ? "|disabled" : ""}`;

test("the outline: roles, names and text in document order, refs on interactive nodes, nothing hidden", () => {
  const o = pageWith(mail(2))();
  assert.deepEqual(o.outline.map(line), [
    "heading|Inbox||L1",
    "main||",
    "  heading|Quarterly report||L2",
    "  paragraph||From: Ada Lovelace",
    "  paragraph||The numbers",
    "    text||Regards",
    "  table||",
    "    row||",
    "      columnheader||Region",
    "      columnheader||Sales",
    "    row||",
    "      cell||North",
    "      cell||1200",
    "  paragraph||",
    "    button|Archive||e1",
    "    link|Reply||e2",
    "    button|Send||disabled",
    "  textbox|Search|quarterly|e3",
    "  textbox|Password||e4",
    "  text||shown again",
    "  list||",
    "    listitem||Older message 1",
    "    listitem||Older message 2",
  ]);
  assert.equal(o.outlineOffset, 0);
  assert.equal(o.outlineMore, false);
  assert.doesNotMatch(JSON.stringify(o.outline), /HIDDEN-/);
  // The same ids as the elements, and the same again in a second observation.
  const byName = Object.fromEntries(o.elements.map((e) => [e.name, e.id]));
  assert.deepEqual(byName, { Archive: "e1", Reply: "e2", Search: "e3", Password: "e4" });
  const observe = pageWith(mail(0));
  assert.equal(observe().outline.find((n) => n.name === "Archive").id, observe().outline.find((n) => n.name === "Archive").id);
});

test("outlineOffset and outlineBytes page through the outline, each node once", () => {
  const observe = pageWith(mail(400));
  const seen = [];
  let offset = 0;
  let chunks = 0;
  for (;;) {
    const o = observe({ outlineOffset: offset, outlineBytes: 4096 });
    assert.equal(o.outlineOffset, offset);
    assert.ok(o.outline.length > 0);
    const bytes = o.outline.reduce((s, n) => s + 16 + 2 * n.depth + n.role.length + n.name.length + n.text.length + (n.id ? 24 : 0), 0);
    assert.ok(bytes <= 4096, `chunk of ${bytes} bytes`);
    seen.push(...o.outline.filter((n) => n.role === "listitem").map((n) => n.text));
    chunks++;
    offset += o.outline.length;
    if (!o.outlineMore) break;
  }
  assert.ok(chunks > 2, `${chunks} chunks`);
  assert.deepEqual(seen, Array.from({ length: 400 }, (_, i) => `Older message ${i + 1}`));
  // Past the end: nothing, and no more.
  const past = observe({ outlineOffset: offset + 10 });
  assert.deepEqual(past.outline, []);
  assert.equal(past.outlineMore, false);
});

test("long text goes on in text nodes", () => {
  const long = "word ".repeat(500).trim();
  const o = pageWith(h("body", {}, h("p", {}, long)))();
  assert.deepEqual(o.outline.map((n) => n.role), ["paragraph", "text", "text"]);
  assert.equal(o.outline[0].text.length, 1000);
  assert.equal(o.outline.map((n) => n.text).join(""), long);
});

test("the worker takes outlineOffset on observe and bounds the outline it sends", () => {
  assert.equal(validateStep({ kind: "observe", outlineOffset: 412 }).outlineOffset, 412);
  assert.equal(validateStep({ kind: "observe" }).outlineOffset, 0);
  assert.throws(() => validateStep({ kind: "observe", outlineOffset: -1 }), /outlineOffset/);
  assert.throws(() => validateStep({ kind: "observe", outlineOffset: "3" }), /outlineOffset/);
  const o = observation({
    document: "d", epoch: 1, elements: [], outlineOffset: 5, outlineMore: 1,
    outline: [{ depth: -3, role: "x".repeat(100), name: "n", text: "t".repeat(10000), id: "e1", level: 99, checked: "yes", extra: 1 }],
  });
  assert.equal(o.outlineOffset, 5);
  assert.equal(o.outlineMore, true);
  assert.deepEqual(Object.keys(o.outline[0]).sort(), ["checked", "depth", "disabled", "id", "level", "name", "role", "text"]);
  assert.equal(o.outline[0].depth, 0);
  assert.equal(o.outline[0].role.length, 64);
  assert.equal(o.outline[0].text.length, 4096);
  assert.equal(o.outline[0].level, 6);
  assert.equal(o.outline[0].checked, false);
  assert.deepEqual(observation({ document: "d", epoch: 0 }).outline, []);
});
