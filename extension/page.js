// tabwarden's page script: ONE function expression, shared by both drivers.
//
// The cdp driver embeds this file (extension/pagescript.go) and the extension loads it
// (fetch(chrome.runtime.getURL("page.js")), extension/act.js). Both run it ONLY in an isolated
// world of the page's main frame (Page.createIsolatedWorld, worldName "tabwarden"; the
// extension through chrome.debugger), never in the page's own world, and ONLY as
//
//     (<this file>)(<JSON op>, <JSON args>)
//
// No other expression is ever evaluated: this is our bundled function called with data, not
// an eval of caller input. The file is one expression whose value is the function; it also
// assigns it to the isolated world's globalThis.tabwardenPage, so that a driver that cannot
// evaluate source (an MV3 extension: no eval) can inject the file as is
// (chrome.scripting.executeScript({files: ["page.js"], world: "ISOLATED"})) and then call
// globalThis.tabwardenPage(op, args) with executeScript({func, args}). The page's own world
// never sees it. The page cannot see or patch the isolated world's globals or
// prototypes; it can only change its DOM, which this script reads as untrusted data.
//
// State lives in the isolated world's globalThis, which is per document:
//   * document: a random id, new for every document (a navigation, a reload, or a new
//     isolated world after the driver reconnects makes a new one), so refs and points of
//     an older document are refused (stale_ref, stale_coordinates);
//   * epoch: the render epoch, bumped by scrolling (the window or any element), resizing and
//     re-renders. A re-render is a DOM mutation that can move boxes: an element added or
//     removed, or a change of an element's style, class, hidden or open attribute.
//     Text-only changes (a text node's data, or children replaced by text only: a ticking
//     clock, a counter, a live price) are NOT re-renders, so that a live page does not make
//     every point stale forever; they rarely move the element under a point;
//   * ids: e1, e2, … assigned once per element (a WeakMap element → id, a Map id → WeakRef),
//     so a ref never names a replacement element, however alike. An element of a same-origin
//     iframe's document is f<k>.e<n>: f<k> names the frame's document (once per document), and
//     a ref whose frame no longer shows that document (it navigated) is stale_ref. Walks go
//     through open shadow roots and same-origin frames (see "the composed tree" below).
//
// Ops (args in braces) and results; errors are returned as data, never thrown:
//   init({world})            first call in a new world: a new document id, epoch 0, no refs;
//                            remember the world nonce
//   info()                   {document, epoch, url, title, readyState, scrollX, scrollY, mac}
//   observe({max, outlineOffset, outlineBytes})
//                            the visible interactive elements (links, buttons, inputs, selects,
//                            textareas, summary, contenteditable, [onclick], ARIA widget roles)
//                            in document order: {document, epoch, url, title, scrollX, scrollY,
//                            elements: [{id, role, name, x, y, width, height}], truncated,
//                            outline, outlineOffset, outlineMore}, and the whole document's
//                            content as an outline (one walk of the DOM, see outline() below):
//                            outline: [{depth, role, name, text, id, level, checked, disabled}]
//                            from node outlineOffset on, about outlineBytes (default 32768) of
//                            it; outlineMore when nodes follow. id is set on interactive nodes
//                            that can be targeted: the same ids (refs) as elements.
//   locate({target})         {x, y}: the viewport centre of the target, scrolled into view
//                            first (ref, text); target is {ref, document} | {text} |
//                            {selector} | {point: true, x, y, document, epoch}
//   focus({target})          focuses the target (for typing), caret at the end: {x, y}
//   field({target})          checks that the target is a text field a fill can type into (an
//                            enabled, writable text <input>, a <textarea> or a contenteditable
//                            element; the target or the field at its point), focusing nothing:
//                            {x, y}; anything else is target_not_found
//   fillFocus({target})      focuses that field and selects its whole content, so that the
//                            text inserted next replaces it: {x, y}
//   select({target, text})   chooses the option of the target <select> whose label (else
//                            value) is text, as the user's choice would: the value set, then
//                            input and change events (bubbling): {x, y, value}
//   upload({target, files})  puts files ([{name, type, lastModified, data}], data in base64) into
//                            the file input the target names (the input, a <label> whose control
//                            it is, or an element holding exactly one), as the user's pick in
//                            the file chooser would: the input's files replaced, then input and
//                            change events (bubbling): {x, y, files: [names]}
//   scroll({dx, dy})         scrolls the page (or the scrollable element under the viewport's
//                            centre when the page itself cannot scroll): {scrollX, scrollY, epoch}
//   hasText({text})          {found}: whether the page's visible text or title contains text
//   find({target})           {found: element} for a text target: the one element it names
//                            (ambiguous_target, target_not_found as for locate), nothing
//                            scrolled or focused (the cdp driver asks every frame first)
//   frameInfo()              called on an <iframe> element (the receiver, see self): {reachable}
//                            (this world reads its document: the page script walks it itself),
//                            slot (the outline's frame number of that frame, once per frame
//                            element, when observe marked it), x, y (its content box's origin in this world's
//                            viewport) and clip {left, top, right, bottom} (the part of the
//                            content box this world's viewport and frames show)
//   frameHit({x, y})         called on an <iframe> element: {hit}: whether that frame is what a
//                            click at x, y (this world's viewport) lands on, and {what} else
// observe({frames: true}) (the cdp driver) marks each frame node it cannot reach with a
// number, frame, that frameInfo reports as slot: where the driver splices that frame's outline.
// Every op but init takes {world}: the nonce given to init. A call without the nonce of this
// world (a context id that now names another world) returns world_mismatch.
// Errors: {error: {reason, message, candidates?, document?, epoch?}} (document and epoch,
// with candidates, say which page state the candidates' ids are refs of), reason one of stale_ref,
// stale_coordinates, ambiguous_target, target_not_found, bad_request, world_mismatch.
globalThis.tabwardenPage = function tabwardenPage(op, args) {
  "use strict";
  // self: the receiver. Called as (Source)(op, args) it is undefined; the cdp driver calls
  // frameInfo and frameHit with Runtime.callFunctionOn on an <iframe> element it resolved
  // in this world (DOM.getFrameOwner: the browser names the element), as the receiver.
  const self = this;
  args = args || {};
  const KEY = "__tabwardenPageState";
  const NAME_MAX = 100;
  const MAX_ELEMENTS = 500;
  const INTERACTIVE = [
    "a[href]", "area[href]", "button", "input:not([type=hidden])", "select", "textarea", "summary",
    "[contenteditable]:not([contenteditable=false])", "[onclick]",
    "[role=button]", "[role=link]", "[role=checkbox]", "[role=radio]", "[role=switch]", "[role=tab]",
    "[role=menuitem]", "[role=menuitemcheckbox]", "[role=menuitemradio]", "[role=option]",
    "[role=combobox]", "[role=textbox]", "[role=searchbox]", "[role=slider]", "[role=spinbutton]",
    "[role=treeitem]",
  ].join(",");

  const MUTATIONS = {
    subtree: true, childList: true, attributes: true,
    attributeFilter: ["style", "class", "hidden", "open"],
  };

  // isInteractive: the elements an observation lists and a target may name. A
  // <label> of a file input the page hides (styled upload buttons) is one: the
  // label is what the user clicks to pick a file.
  function isInteractive(el) {
    return el.matches(INTERACTIVE) || fileLabel(el);
  }

  function fileLabel(el) {
    if (el.localName !== "label") return false;
    const c = el.control;
    return !!c && c.localName === "input" && c.type === "file" && !rendered(c);
  }

  // fileControl is the file input el names: el itself, the control of a
  // <label>, or the one file input inside el (none: null).
  function fileControl(el) {
    if (!el) return null;
    if (el.localName === "input") return el.type === "file" ? el : null;
    if (el.localName === "label") {
      const c = el.control;
      return c && c.localName === "input" && c.type === "file" ? c : null;
    }
    const inside = typeof el.querySelectorAll === "function" ? el.querySelectorAll("input[type=file]") : [];
    return inside.length === 1 ? inside[0] : null;
  }

  function fail(reason, message, candidates) {
    const e = { reason, message };
    if (candidates) {
      // The candidates' ids are refs of the page as it is now.
      e.candidates = candidates;
      e.document = S.document;
      e.epoch = S.epoch;
    }
    return { error: e };
  }

  function randomID() {
    const a = new Uint8Array(12);
    crypto.getRandomValues(a);
    return "d" + Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // --- state ---

  let S = globalThis[KEY];
  if (op === "init") {
    if (typeof args.world !== "string" || args.world === "") {
      return fail("bad_request", "init needs a world nonce");
    }
    // A new world for the driver is a new document id, even when the browser hands
    // back a world this script ran in before (another driver connection).
    if (S) S.stop();
    S = newState();
    Object.defineProperty(globalThis, KEY, { value: S, configurable: true });
    S.world = args.world;
    return info();
  }
  if (!S || S.doc !== document || S.world !== args.world) {
    return fail("world_mismatch", "this is not the world the driver initialised; create it again");
  }

  function newState() {
    const st = {
      doc: document,
      document: randomID(),
      epoch: 0,
      world: "",
      next: 1,
      ids: new WeakMap(),
      refs: new Map(),
      // frames: a same-origin frame's document → its id (f1, f2, …), once per document, so
      // that a frame that navigates gets a new id and its old refs are refused.
      frames: new WeakMap(),
      nextFrame: 1,
      // slots: an unreachable frame element → its number in observe's outline (once each).
      slots: new WeakMap(),
      nextSlot: 0,
      // watched: the shadow roots and frame documents whose re-renders and scrolls count too.
      watched: new WeakSet(),
      frameWins: [],
      view: viewState(),
      // scrolled: element → "left,top" last seen, so that a scroll event that fires
      // late (a background tab renders no frames) is not counted twice.
      scrolled: new WeakMap(),
      mo: null,
    };
    const bump = () => { st.epoch++; };
    // A scroll or resize counts once: when the position or size differs from the one
    // last seen, whether sync() or the event sees it first.
    const onView = (ev) => {
      let el = ev && ev.target;
      // A frame's document scrolled: counted as its scrolling element.
      if (el && el.nodeType === Node.DOCUMENT_NODE && el !== document) el = el.scrollingElement;
      if (el && el.nodeType === Node.ELEMENT_NODE) {
        const pos = `${el.scrollLeft},${el.scrollTop}`;
        if (st.scrolled.get(el) !== pos) {
          st.scrolled.set(el, pos);
          bump();
        }
        return;
      }
      const v = viewState();
      if (v !== st.view) {
        st.view = v;
        bump();
      }
    };
    st.onView = onView;
    st.mo = new MutationObserver((records) => { if (records.some(rerenders)) bump(); });
    st.mo.observe(document, MUTATIONS);
    addEventListener("scroll", onView, { capture: true, passive: true });
    addEventListener("resize", onView, { passive: true });
    st.stop = () => {
      st.mo.disconnect();
      removeEventListener("scroll", onView, { capture: true });
      removeEventListener("resize", onView);
      for (const w of st.frameWins) {
        const win = w.deref();
        if (win) win.removeEventListener("scroll", onView, { capture: true });
      }
    };
    return st;
  }

  function rerenders(r) {
    if (r.type === "attributes") return true;
    if (r.type !== "childList") return false;
    for (const n of r.addedNodes) if (n.nodeType === Node.ELEMENT_NODE) return true;
    for (const n of r.removedNodes) if (n.nodeType === Node.ELEMENT_NODE) return true;
    return false;
  }

  function viewState() {
    return [scrollX, scrollY, innerWidth, innerHeight].join(",");
  }

  // sync applies what happened since the last call but was not delivered yet: pending
  // mutation records, and scrolls or resizes whose events have not fired (a background
  // tab renders no frames, so its scroll events may never fire).
  function sync() {
    const pending = S.mo.takeRecords();
    if (pending.some(rerenders)) S.epoch++;
    const v = viewState();
    if (v !== S.view) {
      S.view = v;
      S.epoch++;
    }
  }

  // --- the composed tree: open shadow roots, slots and same-origin frames ---
  //
  // Every walk of the page (observe's elements, the outline, text targets, hit tests) goes
  // through the flat tree: an element with an open shadow root shows that root's children,
  // a <slot> the light nodes assigned to it (else its fallback content), so slotted content
  // comes once, where it renders, and unslotted light children (not rendered) not at all.
  // Closed shadow roots are unreachable (element.shadowRoot is null). A frame (<iframe>,
  // <frame>) whose document this world may read (same origin, in process) shows that
  // document; any other frame (cross-origin: a SecurityError or null) is a leaf the outline
  // marks as unreachable.

  // frameDoc is the document of a same-origin frame element, else null.
  function frameDoc(el) {
    if (el.localName !== "iframe" && el.localName !== "frame") return null;
    try {
      const d = el.contentDocument;
      return d && d.documentElement ? d : null;
    } catch (e) {
      return null; // cross-origin
    }
  }

  // frameOrigin is what the outline says of a frame: its src's origin.
  function frameOrigin(el) {
    if (el.hasAttribute("srcdoc") && el.hasAttribute("sandbox")) return "sandboxed";
    const src = el.getAttribute("src");
    if (!src) return "about:blank";
    try {
      const u = new URL(src, el.baseURI);
      return u.origin !== "null" ? u.origin : u.protocol;
    } catch (e) {
      return "";
    }
  }

  // flatKids: the nodes rendered as el's children.
  function flatKids(el) {
    if (el.shadowRoot) return el.shadowRoot.childNodes;
    if (el.localName === "slot" && typeof el.assignedNodes === "function") {
      const a = el.assignedNodes();
      if (a.length) return a;
    }
    return el.childNodes;
  }

  // watch has re-renders and scrolls of a shadow root or a frame's document count in the
  // render epoch too.
  function watch(root) {
    if (S.watched.has(root)) return;
    S.watched.add(root);
    S.mo.observe(root, MUTATIONS);
    if (root.nodeType === Node.DOCUMENT_NODE && root.defaultView) {
      root.defaultView.addEventListener("scroll", S.onView, { capture: true, passive: true });
      S.frameWins.push(new WeakRef(root.defaultView));
    }
  }

  // docOf is el's document (the page's when el has none).
  function docOf(el) {
    return el.ownerDocument || document;
  }

  function styleOf(el) {
    const d = docOf(el);
    const v = d && d !== document ? d.defaultView : null;
    return v ? v.getComputedStyle(el) : getComputedStyle(el);
  }

  // eachElement calls f on every element of the page in flat-tree order, frames included
  // (a frame's own box first, then its document when it is rendered and readable).
  function eachElement(f) {
    const walk = (el) => {
      f(el);
      const d = frameDoc(el);
      if (d) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 && r.height > 0) {
          watch(d);
          walk(d.documentElement);
        }
        return;
      }
      if (el.shadowRoot) watch(el.shadowRoot);
      for (const c of flatKids(el)) if (c.nodeType === 1) walk(c);
    };
    if (document.documentElement) walk(document.documentElement);
  }

  // hasFrame says whether the page holds a frame element (<iframe>, <frame>) anywhere in its
  // flat tree. locate with noFrames asks it first and refuses (has_frames) before anything
  // scrolls: the cdp driver sends it before it has read whether the page has frames.
  function hasFrame() {
    let found = false;
    eachElement((el) => {
      if (el.localName === "iframe" || el.localName === "frame") found = true;
    });
    return found;
  }

  // frameOf is the frame element holding doc, or null for the page's own document.
  function frameOf(doc) {
    if (doc === document) return null;
    const w = doc.defaultView;
    return (w && w.frameElement) || null;
  }

  // live says whether doc is still shown: the page's document, or the document its frame
  // element shows, in a frame still on the page (every frame on the way, too).
  function live(doc) {
    for (let d = doc; d !== document;) {
      const fe = frameOf(d);
      if (!fe || !fe.isConnected || frameDoc(fe) !== d) return false;
      d = docOf(fe);
    }
    return true;
  }

  // originOf is where doc's viewport sits in the page's viewport: the content box of its
  // frame (border and padding), frame in frame.
  function originOf(doc) {
    let x = 0, y = 0;
    for (let d = doc; d !== document;) {
      const fe = frameOf(d);
      if (!fe) return null;
      const r = fe.getBoundingClientRect();
      const cs = styleOf(fe);
      x += r.left + fe.clientLeft + (parseFloat(cs.paddingLeft) || 0);
      y += r.top + fe.clientTop + (parseFloat(cs.paddingTop) || 0);
      d = docOf(fe);
    }
    return { x, y };
  }

  // boxOf is el's box in the page's viewport ({left, top, right, bottom, width, height}) and
  // the part of it every frame on the way (and the page's viewport) shows (clip), or null
  // when its frame is gone.
  function boxOf(el) {
    const o = originOf(docOf(el));
    if (!o) return null;
    const r = el.getBoundingClientRect();
    const box = { left: r.left + o.x, top: r.top + o.y, right: r.right + o.x, bottom: r.bottom + o.y, width: r.width, height: r.height };
    const clip = { left: Math.max(box.left, 0), top: Math.max(box.top, 0), right: Math.min(box.right, innerWidth), bottom: Math.min(box.bottom, innerHeight) };
    for (let d = docOf(el); d !== document;) {
      const fo = originOf(d);
      const w = d.defaultView;
      clip.left = Math.max(clip.left, fo.x);
      clip.top = Math.max(clip.top, fo.y);
      clip.right = Math.min(clip.right, fo.x + w.innerWidth);
      clip.bottom = Math.min(clip.bottom, fo.y + w.innerHeight);
      d = docOf(frameOf(d));
    }
    box.clip = clip;
    return box;
  }

  // deepHit is the element at a point of the page's viewport: into open shadow roots and
  // same-origin frames (document.elementFromPoint stops at a shadow host or a frame).
  function deepHit(x, y) {
    let hit = document.elementFromPoint(x, y);
    let ox = 0, oy = 0;
    while (hit) {
      while (hit.shadowRoot) {
        const inner = hit.shadowRoot.elementFromPoint(x - ox, y - oy);
        if (!inner || inner === hit) break;
        hit = inner;
      }
      const d = frameDoc(hit);
      if (!d) return hit;
      const o = originOf(d);
      if (!o) return hit;
      ox = o.x;
      oy = o.y;
      const inner = d.elementFromPoint(x - ox, y - oy);
      if (!inner) return hit;
      hit = inner;
    }
    return hit;
  }

  // holds says whether a is b or holds it: an ancestor across shadow roots and frames.
  function holds(a, b) {
    for (let n = b; n;) {
      if (n === a) return true;
      if (n.parentNode) n = n.parentNode;
      else if (n.host) n = n.host;
      else if (n.nodeType === Node.DOCUMENT_NODE) n = frameOf(n);
      else return false;
    }
    return false;
  }

  // focused says whether el (or something inside it) has the keyboard focus in its own
  // document or shadow root.
  function focused(el) {
    const root = el.getRootNode();
    const a = root.activeElement;
    return a === el || (a && el.contains(a));
  }

  // --- elements ---

  // idOf is el's ref: e<n>, once per element; an element of a frame's document names its
  // frame first: f<k>.e<n>.
  function idOf(el) {
    let id = S.ids.get(el);
    if (!id) {
      const d = docOf(el);
      let prefix = "";
      if (d !== document) {
        let f = S.frames.get(d);
        if (!f) {
          f = "f" + S.nextFrame++;
          S.frames.set(d, f);
        }
        prefix = f + ".";
      }
      id = prefix + "e" + S.next++;
      S.ids.set(el, id);
      S.refs.set(id, new WeakRef(el));
    }
    return id;
  }

  function collapse(s) {
    return String(s || "").replace(/\s+/g, " ").trim();
  }

  function truncate(s) {
    return s.length > NAME_MAX ? s.slice(0, NAME_MAX - 1) + "…" : s;
  }

  function roleOf(el) {
    const explicit = collapse(el.getAttribute("role")).split(" ")[0];
    if (explicit) return explicit;
    const tag = el.localName;
    if (tag === "label") return "button"; // a file input's label (isInteractive)
    switch (tag) {
      case "a": case "area": return "link";
      case "button": case "summary": return "button";
      case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "textarea": return "textbox";
      case "input": {
        const t = (el.getAttribute("type") || "text").toLowerCase();
        switch (t) {
          case "checkbox": return "checkbox";
          case "radio": return "radio";
          case "button": case "submit": case "reset": case "image": return "button";
          case "range": return "slider";
          case "number": return "spinbutton";
          case "search": return "searchbox";
          case "file": return "button";
          default: return "textbox";
        }
      }
    }
    if (el.isContentEditable) return "textbox";
    return "button"; // [onclick] on a generic element acts as one
  }

  function textOf(el) {
    // innerText is the rendered text; for form controls it is empty.
    return collapse(el.innerText !== undefined ? el.innerText : el.textContent);
  }

  function nameOf(el) {
    const label = collapse(el.getAttribute("aria-label"));
    if (label) return label;
    const by = el.getAttribute("aria-labelledby");
    if (by) {
      const t = collapse(by.split(/\s+/).map((id) => {
        const root = el.getRootNode();
        const n = typeof root.getElementById === "function" ? root.getElementById(id) : null;
        return n ? n.textContent : "";
      }).join(" "));
      if (t) return t;
    }
    const tag = el.localName;
    if (tag === "input" || tag === "textarea" || tag === "select") {
      const t = (el.getAttribute("type") || "").toLowerCase();
      if (tag === "input" && (t === "submit" || t === "reset" || t === "button")) {
        return collapse(el.value) || (t === "submit" ? "Submit" : t === "reset" ? "Reset" : "");
      }
      if (tag === "input" && t === "image") return collapse(el.alt || el.value);
      if (el.labels && el.labels.length) {
        const l = collapse(Array.from(el.labels, (n) => n.innerText).join(" "));
        if (l) return l;
      }
      const p = collapse(el.getAttribute("placeholder") || el.title);
      if (p) return p;
      if (tag === "input" && t === "file") return "Choose file";
      return "";
    }
    const t = textOf(el);
    if (t) return t;
    const img = el.querySelector("img[alt]");
    if (img) return collapse(img.alt);
    return collapse(el.title);
  }

  function rendered(el) {
    if (el.matches(":disabled")) return false;
    if (typeof el.checkVisibility === "function" &&
        !el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }

  // inViewport says whether some of el shows in the page's viewport (and its frames').
  function inViewport(el) {
    const b = boxOf(el);
    return !!b && b.clip.right > b.clip.left && b.clip.bottom > b.clip.top;
  }

  function describe(el) {
    const r = boxOf(el) || el.getBoundingClientRect();
    return {
      id: idOf(el), role: roleOf(el), name: truncate(nameOf(el)),
      x: Math.round(r.left), y: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height),
    };
  }

  function interactive() {
    const out = [];
    eachElement((el) => {
      if (isInteractive(el) && rendered(el)) out.push(el);
    });
    return out;
  }

  // --- targets ---

  // centre returns the viewport point to click on el: the centre of its visible part,
  // or another point of it when something else covers the centre.
  // Points are in the page's viewport, whatever frame el is in.
  function centre(el) {
    const b = boxOf(el);
    if (!b) return null;
    const { left, right, top, bottom } = b.clip;
    if (right <= left || bottom <= top) return null;
    const points = [
      [(left + right) / 2, (top + bottom) / 2],
      [left + (right - left) / 4, (top + bottom) / 2],
      [left + 3 * (right - left) / 4, (top + bottom) / 2],
      [(left + right) / 2, top + (bottom - top) / 4],
      [(left + right) / 2, top + 3 * (bottom - top) / 4],
    ];
    for (const [x, y] of points) {
      const hit = deepHit(x, y);
      if (hit && (holds(el, hit) || holds(hit, el) && hit.localName === "label")) {
        return { x, y };
      }
    }
    return { covered: true, x: points[0][0], y: points[0][1] };
  }

  function reveal(el) {
    const b = boxOf(el);
    if (!b) return;
    const c = b.clip;
    if (c.top > b.top || c.left > b.left || c.bottom < b.bottom || c.right < b.right) {
      el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
      sync();
    }
  }

  function element(target) {
    if (!target || typeof target !== "object") return fail("bad_request", "no target");
    if (target.ref) {
      if (target.document !== S.document) {
        return fail("stale_ref", `ref ${target.ref} is from document ${target.document || "(none)"}; the page now shows document ${S.document} (it navigated or reloaded): observe again`);
      }
      const w = S.refs.get(target.ref);
      const el = w && w.deref();
      if (el && !live(docOf(el))) {
        const f = String(target.ref).split(".")[0];
        return fail("stale_ref", `the element ${target.ref} named was in frame ${f}, which has since navigated or been removed (a ref never names the frame's new document): observe again`);
      }
      if (!el || !el.isConnected) {
        return fail("stale_ref", `the element ${target.ref} named is gone from the page (removed or replaced): observe again`);
      }
      if (!rendered(el)) {
        return fail("stale_ref", `the element ${target.ref} named is no longer visible: observe again`);
      }
      return { el };
    }
    if (typeof target.text === "string" && target.text !== "") {
      const want = collapse(target.text);
      const els = interactive();
      let exact = els.filter((el) => nameOf(el) === want || textOf(el) === want);
      if (exact.length === 0) {
        exact = els.filter((el) => nameOf(el).includes(want) || textOf(el).includes(want));
      }
      // An element containing another match (a list item holding its button) is not a
      // second match.
      exact = exact.filter((el) => !exact.some((o) => o !== el && el.contains(o)));
      if (exact.length === 0) {
        return fail("target_not_found", `no visible interactive element reads ${JSON.stringify(want)}: observe to see what the page offers`);
      }
      if (exact.length > 1) {
        return fail("ambiguous_target", `${exact.length} visible elements read ${JSON.stringify(want)}: target one of them by ref`,
          exact.slice(0, 32).map(describe));
      }
      return { el: exact[0] };
    }
    if (typeof target.selector === "string" && target.selector !== "") {
      let all;
      try {
        all = Array.from(document.querySelectorAll(target.selector));
      } catch (e) {
        return fail("bad_request", `invalid CSS selector ${JSON.stringify(target.selector)}: ${e.message}`);
      }
      const els = all.filter(rendered);
      if (els.length === 0) {
        return fail("target_not_found", `no visible element matches ${JSON.stringify(target.selector)} (${all.length} hidden)`);
      }
      if (els.length > 1) {
        return fail("ambiguous_target", `${els.length} visible elements match ${JSON.stringify(target.selector)}`, els.slice(0, 32).map(describe));
      }
      return { el: els[0] };
    }
    return fail("bad_request", "a target is one of ref (with its document), text, selector or a point");
  }

  function locate(target) {
    if (target && target.point) {
      if (target.document !== S.document || target.epoch !== S.epoch) {
        return fail("stale_coordinates", `the point (${target.x}, ${target.y}) was read in document ${target.document} at epoch ${target.epoch}; the page has since scrolled, navigated or re-rendered (now document ${S.document}, epoch ${S.epoch}): observe again`);
      }
      const x = Number(target.x), y = Number(target.y);
      if (!(x >= 0 && y >= 0 && x < innerWidth && y < innerHeight) || !document.elementFromPoint(x, y)) {
        return fail("target_not_found", `no element at (${x}, ${y}) in the ${innerWidth}x${innerHeight} viewport`);
      }
      return { x, y };
    }
    const found = element(target);
    if (found.error) return found;
    reveal(found.el);
    const c = centre(found.el);
    if (!c) return fail("target_not_found", "the element is outside the viewport and could not be scrolled into view");
    if (c.covered) {
      const hit = document.elementFromPoint(c.x, c.y);
      return fail("target_not_found", `the element is covered by <${hit ? hit.localName : "?"}> (a dialog or overlay?): observe again`);
    }
    return { x: c.x, y: c.y, id: idOf(found.el) };
  }

  function focus(target) {
    const loc = locate(target);
    if (loc.error) return loc;
    if (!loc.id) return loc;
    const el = S.refs.get(loc.id).deref();
    el.focus({ preventScroll: true });
    if (!focused(el)) {
      return fail("target_not_found", `<${el.localName}> cannot take the keyboard focus: target a text field`);
    }
    try {
      if (typeof el.value === "string" && typeof el.setSelectionRange === "function") {
        el.setSelectionRange(el.value.length, el.value.length);
      } else if (el.isContentEditable) {
        const sel = (el.ownerDocument.defaultView || window).getSelection();
        sel.selectAllChildren(el);
        sel.collapseToEnd();
      }
    } catch (e) {
      // Inputs without a selection (email, number) keep the caret where it was.
    }
    return loc;
  }

  const TEXT_INPUTS = new Set(["text", "email", "search", "tel", "url", "password", "number"]);

  function textField(target) {
    const loc = locate(target);
    if (loc.error) return { loc };
    const hit = loc.id ? S.refs.get(loc.id).deref() : deepHit(loc.x, loc.y);
    const el = hit && hit.closest ? hit.closest("input, textarea, [contenteditable]") : null;
    const text = el && (el.isContentEditable || el.localName === "textarea" || (el.localName === "input" && TEXT_INPUTS.has(el.type)));
    if (!text) {
      const what = el || hit;
      return { loc: fail("target_not_found", `<${what ? what.localName : "?"}${what && what.type ? ` type=${what.type}` : ""}> is not a text field: a fill types into text inputs, textareas and editable elements (target a Select step at a drop-down, a Click at a checkbox)`) };
    }
    if (el.disabled || el.readOnly) return { loc: fail("target_not_found", `the text field is ${el.disabled ? "disabled" : "read-only"}`) };
    return { loc, el };
  }

  function fillFocus(target) {
    const f = textField(target);
    if (f.loc.error) return f.loc;
    const el = f.el;
    el.focus({ preventScroll: true });
    if (!focused(el)) {
      return fail("target_not_found", `<${el.localName}> cannot take the keyboard focus`);
    }
    if (typeof el.select === "function") {
      el.select();
    } else {
      (el.ownerDocument.defaultView || window).getSelection().selectAllChildren(el);
    }
    return { x: f.loc.x, y: f.loc.y };
  }

  function choose(target, text) {
    const loc = locate(target);
    if (loc.error) return loc;
    const hit = loc.id ? S.refs.get(loc.id).deref() : deepHit(loc.x, loc.y);
    const el = hit && hit.closest ? hit.closest("select") : null;
    if (!el) {
      return fail("target_not_found", `<${hit ? hit.localName : "?"}> is not a drop-down (<select>): target one (role combobox or listbox in an observation)`);
    }
    const want = collapse(text);
    const options = Array.from(el.options);
    const o = options.find((op) => collapse(op.label) === want) || options.find((op) => op.value === text);
    if (!o) {
      const offered = options.slice(0, 20).map((op) => JSON.stringify(collapse(op.label))).join(", ");
      return fail("target_not_found", `the drop-down has no option labelled or valued ${JSON.stringify(want)}; it offers ${offered || "none"}`);
    }
    if (o.disabled || el.disabled) return fail("target_not_found", `the option ${JSON.stringify(collapse(o.label))} is disabled`);
    if (!o.selected || el.multiple) {
      if (el.multiple) for (const other of options) other.selected = other === o;
      el.value = o.value;
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    }
    return { x: loc.x, y: loc.y, value: o.value };
  }

  function upload(target, files) {
    if (!Array.isArray(files) || files.length === 0) return fail("bad_request", "an upload needs files");
    const loc = locate(target);
    if (loc.error) return loc;
    const hit = loc.id ? S.refs.get(loc.id).deref() : deepHit(loc.x, loc.y);
    const input = fileControl(hit) || fileControl(hit && hit.closest ? hit.closest("label") : null);
    if (!input) {
      return fail("target_not_found", `<${hit ? hit.localName : "?"}> is not a file input: target the <input type=file>, its label, or the element holding it (role button, e.g. "Choose file", in an observation)`);
    }
    if (input.disabled) return fail("target_not_found", "the file input is disabled");
    if (files.length > 1 && !input.multiple) {
      return fail("target_not_found", `the file input takes one file (it has no multiple attribute), not ${files.length}: upload one`);
    }
    const dt = new DataTransfer();
    for (const f of files) {
      const bin = atob(String(f.data || ""));
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      dt.items.add(new File([bytes], String(f.name), { type: String(f.type || ""), lastModified: Number(f.lastModified) || Date.now() }));
    }
    input.files = dt.files;
    input.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    input.dispatchEvent(new Event("change", { bubbles: true }));
    return { x: loc.x, y: loc.y, files: Array.from(input.files, (f) => f.name) };
  }

  function scrollableAtCentre() {
    let n = document.elementFromPoint(innerWidth / 2, innerHeight / 2);
    for (; n && n !== document.documentElement && n !== document.body; n = n.parentElement) {
      const s = getComputedStyle(n);
      if ((/(auto|scroll)/.test(s.overflowY) && n.scrollHeight > n.clientHeight) ||
          (/(auto|scroll)/.test(s.overflowX) && n.scrollWidth > n.clientWidth)) return n;
    }
    return null;
  }

  function scroll(dx, dy) {
    dx = Number(dx) || 0;
    dy = Number(dy) || 0;
    const before = [scrollX, scrollY];
    scrollBy({ left: dx, top: dy, behavior: "instant" });
    if (scrollX === before[0] && scrollY === before[1]) {
      const inner = scrollableAtCentre();
      if (inner) {
        inner.scrollBy({ left: dx, top: dy, behavior: "instant" });
        S.scrolled.set(inner, `${inner.scrollLeft},${inner.scrollTop}`);
      }
    }
    S.epoch++;
    S.view = viewState();
    return { scrollX: Math.round(scrollX), scrollY: Math.round(scrollY), epoch: S.epoch };
  }

  function info() {
    return {
      document: S.document, epoch: S.epoch, url: location.href, title: document.title,
      readyState: document.readyState, scrollX: Math.round(scrollX), scrollY: Math.round(scrollY),
      mac: /Mac/.test(navigator.platform),
    };
  }

  // --- outline ---

  // Tags whose content is never page text.
  const OUTLINE_SKIP = new Set(["script", "style", "noscript", "template", "head", "meta", "link",
    "title", "iframe", "frame", "object", "embed", "svg", "canvas", "audio", "video", "math", "option", "datalist"]);
  // Implicit roles of the tags the outline shows as nodes of their own.
  const OUTLINE_ROLES = {
    h1: "heading", h2: "heading", h3: "heading", h4: "heading", h5: "heading", h6: "heading",
    p: "paragraph", ul: "list", ol: "list", menu: "list", li: "listitem", dl: "list", dt: "term",
    dd: "definition", table: "table", tr: "row", td: "cell", th: "columnheader", caption: "caption",
    nav: "navigation", main: "main", aside: "complementary", form: "form", article: "article",
    dialog: "dialog", blockquote: "blockquote", figure: "figure", hr: "separator", img: "img",
    fieldset: "group", details: "group", pre: "code",
  };
  // Roles dropped when they hold nothing (no name, text or child node).
  const OUTLINE_DROP_EMPTY = new Set(["paragraph", "list", "listitem", "term", "definition", "caption",
    "navigation", "main", "complementary", "form", "article", "dialog", "blockquote", "figure", "group",
    "code", "heading", "region", "generic", "img"]);
  // Longest text of one node; longer text goes on in "text" nodes.
  const OUTLINE_TEXT_MAX = 1000;
  const OUTLINE_NAME_MAX = 300;
  // Nodes walked past the offset at most: the rest is outlineMore.
  const OUTLINE_MAX_NODES = 5000;

  function utf8Bytes(str) {
    let n = 0;
    for (let i = 0; i < str.length; i++) {
      const c = str.charCodeAt(i);
      n += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c < 0xdc00 ? 4 : c >= 0xdc00 && c < 0xe000 ? 0 : 3;
    }
    return n;
  }

  function outlineRoleOf(el) {
    const explicit = collapse(el.getAttribute("role")).split(" ")[0].toLowerCase();
    if (explicit && explicit !== "presentation" && explicit !== "none" && explicit !== "generic") return explicit;
    if (explicit) return "";
    const tag = el.localName;
    if (tag === "th" && (el.getAttribute("scope") || "").toLowerCase() === "row") return "rowheader";
    if (tag === "img") return collapse(el.getAttribute("alt")) ? "img" : "";
    if (tag === "section" && (el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby"))) return "region";
    return OUTLINE_ROLES[tag] || "";
  }

  // valueOf is a form control's current value as the user sees it (never a password's).
  function valueOf(el) {
    const tag = el.localName;
    if (tag === "textarea") return el.value;
    if (tag === "select") return Array.from(el.selectedOptions || [], (o) => o.label).join(", ");
    if (tag === "input") {
      const t = (el.getAttribute("type") || "text").toLowerCase();
      if (["password", "checkbox", "radio", "submit", "reset", "button", "image", "file", "hidden"].includes(t)) return "";
      return el.value;
    }
    return "";
  }

  // outline walks the document once, in document order, and returns its visible content as
  // nodes: an element with a role (implicit from its tag, or explicit) is a node whose children
  // are nested one level deeper; an interactive element (the same set as elements) is a leaf with
  // its accessible name, value and, when it can be targeted, its ref; text is collapsed into runs,
  // cut at block boundaries and <br>, attached to the node that holds it when it comes first,
  // else a "text" node. Hidden subtrees are skipped: aria-hidden="true", display:none, a
  // zero-size box that clips its content, and the text of visibility:hidden elements (a visible
  // child of one still shows). One computed style and one box per element; none per text node.
  function outline(offset, budget, frames) {
    const slots = frames === true;
    offset = Math.max(0, Math.floor(Number(offset) || 0));
    budget = Math.max(Number(budget) || 32768, 256);
    const out = [];
    const limit = offset + OUTLINE_MAX_NODES;
    let stopped = false;
    const push = (n) => {
      if (out.length >= limit) { stopped = true; return false; }
      out.push(n);
      return true;
    };
    const textNodes = (frame, depth, t) => {
      for (let i = 0; i < t.length; i += OUTLINE_TEXT_MAX) {
        if (!push({ depth, role: "text", name: "", text: t.slice(i, i + OUTLINE_TEXT_MAX), id: "", level: 0, checked: false, disabled: false })) return;
        frame.children++;
      }
    };
    const flush = (frame) => {
      const t = collapse(frame.pending.join(""));
      frame.pending = [];
      if (!t) return;
      const line = frame.line;
      if (line && frame.children === 0 && !line.text) {
        // The node's first text is its own (a heading's is its name); the rest goes on
        // in text nodes.
        const own = line.role === "heading" && !line.name && t.length <= OUTLINE_NAME_MAX ? "name" : "text";
        line[own] = t.slice(0, OUTLINE_TEXT_MAX);
        if (t.length > OUTLINE_TEXT_MAX) textNodes(frame, frame.depth, t.slice(OUTLINE_TEXT_MAX));
        return;
      }
      textNodes(frame, frame.depth, t);
    };
    const visit = (node, frame, textVisible) => {
      if (stopped) return;
      if (node.nodeType === 3) {
        if (textVisible && node.nodeValue) frame.pending.push(node.nodeValue);
        return;
      }
      if (node.nodeType !== 1) return;
      const el = node;
      const tag = el.localName;
      if ((tag === "iframe" || tag === "frame") && el.getAttribute("aria-hidden") !== "true") {
        frameNode(el, frame);
        return;
      }
      if (OUTLINE_SKIP.has(tag) || el.getAttribute("aria-hidden") === "true") return;
      const cs = styleOf(el);
      if (cs.display === "none") return;
      const visible = cs.visibility === "visible";
      if (cs.display !== "contents") {
        const r = el.getBoundingClientRect();
        if ((r.width === 0 || r.height === 0) && cs.overflow !== "visible") return;
      }
      if (tag === "br") {
        flush(frame);
        return;
      }
      if (isInteractive(el)) {
        if (!visible) return;
        flush(frame);
        const t = (el.getAttribute("type") || "").toLowerCase();
        const target = rendered(el);
        if (push({
          depth: frame.depth, role: roleOf(el), name: nameOf(el).slice(0, OUTLINE_NAME_MAX),
          text: collapse(valueOf(el)).slice(0, OUTLINE_TEXT_MAX), id: target ? idOf(el) : "",
          level: 0, checked: tag === "input" && (t === "checkbox" || t === "radio") && el.checked === true,
          disabled: el.matches(":disabled"),
        })) frame.children++;
        return;
      }
      const role = outlineRoleOf(el);
      const block = cs.display !== "contents" && !cs.display.startsWith("inline");
      if (!role) {
        if (block) flush(frame);
        for (const c of flatKids(el)) visit(c, frame, visible);
        if (block) flush(frame);
        return;
      }
      flush(frame);
      if (!visible) {
        // The node itself is hidden; a visible child still shows, at this level.
        for (const c of flatKids(el)) visit(c, frame, false);
        flush(frame);
        return;
      }
      const line = {
        depth: frame.depth, role, name: collapse(el.getAttribute("aria-label") || (role === "img" ? el.getAttribute("alt") : "")).slice(0, OUTLINE_NAME_MAX),
        text: "", id: "", level: role === "heading" ? Number(tag.slice(1)) || Number(el.getAttribute("aria-level")) || 0 : 0,
        checked: false, disabled: false,
      };
      const at = out.length;
      if (!push(line)) return;
      frame.children++;
      const child = { line, depth: frame.depth + 1, pending: [], children: 0 };
      for (const c of flatKids(el)) visit(c, child, visible);
      flush(child);
      if (!stopped && child.children === 0 && !line.name && !line.text && OUTLINE_DROP_EMPTY.has(role) && out.length === at + 1) {
        out.pop();
        frame.children--;
      }
    };
    // A frame is a node "iframe" named by its title, else its src's origin: a same-origin
    // frame holds its document's content; another (cross-origin, out of process) says that
    // the page script cannot read it.
    const frameNode = (el, frame) => {
      const cs = styleOf(el);
      const r = el.getBoundingClientRect();
      if (cs.display === "none" || cs.visibility !== "visible" || r.width === 0 || r.height === 0) return;
      flush(frame);
      const d = frameDoc(el);
      const line = {
        depth: frame.depth, role: "iframe", name: collapse(el.getAttribute("title") || el.getAttribute("aria-label") || frameOrigin(el)).slice(0, OUTLINE_NAME_MAX),
        text: d ? "" : `a frame of ${frameOrigin(el) || "another origin"} the page script cannot reach (cross-origin): its content and elements are not observed`,
        id: "", level: 0, checked: false, disabled: false,
      };
      if (!d && slots) {
        // Once per frame element, so that frameInfo's answer cannot drift from this one.
        let n = S.slots.get(el);
        if (!n) {
          n = ++S.nextSlot;
          S.slots.set(el, n);
        }
        line.frame = n;
      }
      if (!push(line)) return;
      frame.children++;
      if (!d || !d.body) return;
      watch(d);
      const child = { line, depth: frame.depth + 1, pending: [], children: 0 };
      for (const c of d.body.childNodes) visit(c, child, styleOf(d.body).visibility === "visible");
      flush(child);
    };
    const root = { line: null, depth: 0, pending: [], children: 0 };
    if (document.body) {
      for (const c of document.body.childNodes) visit(c, root, getComputedStyle(document.body).visibility === "visible");
      flush(root);
    }
    const nodes = [];
    let used = 0;
    let i = offset;
    for (; i < out.length; i++) {
      const n = out[i];
      const size = 16 + 2 * n.depth + n.role.length + utf8Bytes(n.name) + utf8Bytes(n.text) + (n.id ? 24 : 0);
      if (nodes.length > 0 && used + size > budget) break;
      used += size;
      nodes.push(n);
    }
    return { outline: nodes, outlineOffset: offset, outlineMore: stopped || i < out.length };
  }

  // --- screenshots ---

  // shotBox: what a screenshot takes, in viewport CSS pixels, with the page's scroll offset
  // (a capture's clip is in page coordinates) and the device pixel ratio: the viewport, or the
  // part of the target element's box inside it. It never scrolls: an element outside the
  // viewport is refused.
  function shotBox(target) {
    const vv = globalThis.visualViewport;
    const out = {
      x: 0, y: 0, width: innerWidth, height: innerHeight,
      pageX: vv ? vv.pageLeft : scrollX, pageY: vv ? vv.pageTop : scrollY, dpr: devicePixelRatio || 1,
      hidden: document.visibilityState === "hidden",
    };
    if (!target) return out;
    let el;
    if (target.point) {
      if (target.document !== S.document || target.epoch !== S.epoch) {
        return fail("stale_coordinates", `the point (${target.x}, ${target.y}) was read in document ${target.document} at epoch ${target.epoch}; the page has since scrolled, navigated or re-rendered (now document ${S.document}, epoch ${S.epoch}): observe again`);
      }
      const x = Number(target.x), y = Number(target.y);
      el = x >= 0 && y >= 0 && x < innerWidth && y < innerHeight ? document.elementFromPoint(x, y) : null;
      if (!el) return fail("target_not_found", `no element at (${x}, ${y}) in the ${innerWidth}x${innerHeight} viewport`);
    } else {
      const found = element(target);
      if (found.error) return found;
      el = found.el;
    }
    const b = boxOf(el);
    const { left, top, right, bottom } = b ? b.clip : { left: 0, top: 0, right: 0, bottom: 0 };
    if (right - left < 1 || bottom - top < 1) {
      return fail("target_not_found", "the element is outside the viewport; a screenshot never scrolls: scroll to it first (a Scroll step), or take the viewport");
    }
    return Object.assign(out, { x: left, y: top, width: right - left, height: bottom - top });
  }

  function observe(max, outlineOffset, outlineBytes, frames) {
    max = Math.min(Math.max(Number(max) || 200, 1), MAX_ELEMENTS);
    const visible = interactive().filter(inViewport);
    const o = info();
    o.elements = visible.slice(0, max).map(describe);
    o.truncated = visible.length > max;
    return Object.assign(o, outline(outlineOffset, outlineBytes, frames === true));
  }

  // --- frames the driver reaches itself (cross-origin, out of process) ---

  // frameElement checks the receiver: an <iframe> or <frame> element of a document this
  // world shows (the page's, or a same-origin frame's), else null.
  function frameElement() {
    const el = self;
    if (!el || typeof el !== "object" || el.nodeType !== Node.ELEMENT_NODE) return null;
    if (el.localName !== "iframe" && el.localName !== "frame") return null;
    if (!el.isConnected || !live(docOf(el))) return null;
    return el;
  }

  function frameInfo() {
    const el = frameElement();
    if (!el) return fail("bad_request", "frameInfo is called on a frame element of this world's page");
    const out = { reachable: !!frameDoc(el), slot: S.slots.get(el) || 0, x: 0, y: 0, clip: { left: 0, top: 0, right: 0, bottom: 0 } };
    const b = boxOf(el);
    if (!b || !rendered(el)) return out;
    const cs = styleOf(el);
    const left = b.left + el.clientLeft + (parseFloat(cs.paddingLeft) || 0);
    const top = b.top + el.clientTop + (parseFloat(cs.paddingTop) || 0);
    out.x = left;
    out.y = top;
    out.clip = {
      left: Math.max(b.clip.left, left), top: Math.max(b.clip.top, top),
      right: Math.min(b.clip.right, left + el.clientWidth - (parseFloat(cs.paddingLeft) || 0) - (parseFloat(cs.paddingRight) || 0)),
      bottom: Math.min(b.clip.bottom, top + el.clientHeight - (parseFloat(cs.paddingTop) || 0) - (parseFloat(cs.paddingBottom) || 0)),
    };
    return out;
  }

  function frameHit(x, y) {
    const el = frameElement();
    if (!el) return fail("bad_request", "frameHit is called on a frame element of this world's page");
    x = Number(x);
    y = Number(y);
    if (!(x >= 0 && y >= 0 && x < innerWidth && y < innerHeight)) return { hit: false, what: "outside the viewport" };
    const hit = deepHit(x, y);
    if (hit === el) return { hit: true };
    return { hit: false, what: hit ? `<${hit.localName}${hit.id ? "#" + hit.id : ""}>` : "nothing" };
  }

  function find(target) {
    if (!target || typeof target.text !== "string" || target.text === "") return fail("bad_request", "find takes a text target");
    const found = element(target);
    if (found.error) return found;
    return { found: describe(found.el) };
  }

  try {
    sync();
    switch (op) {
      case "info": return info();
      case "observe": return observe(args.max, args.outlineOffset, args.outlineBytes, args.frames);
      case "find": return find(args.target);
      case "frameInfo": return frameInfo();
      case "frameHit": return frameHit(args.x, args.y);
      case "locate": return args.noFrames && hasFrame() ? fail("has_frames", "the page holds frames: a target is looked for in each") : locate(args.target);
      case "focus": return focus(args.target);
      case "select": return choose(args.target, args.text);
      case "upload": return upload(args.target, args.files);
      case "field": {
        const f = textField(args.target);
        return f.loc.error ? f.loc : { x: f.loc.x, y: f.loc.y };
      }
      case "fillFocus": return fillFocus(args.target);
      case "shotBox": return shotBox(args.target);
      case "scroll": return scroll(args.dx, args.dy);
      case "hasText": {
        const want = collapse(args.text);
        if (!want) return fail("bad_request", "hasText needs text");
        const body = document.body ? collapse(document.body.innerText) : "";
        return { found: body.includes(want) || collapse(document.title).includes(want) };
      }
    }
    return fail("bad_request", `unknown op ${JSON.stringify(op)}`);
  } catch (e) {
    return fail("bad_request", `page script: ${e && e.message ? e.message : String(e)}`);
  }
}
