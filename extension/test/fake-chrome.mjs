// A controlled stand-in for the parts of the Chrome extension API that background.js uses.
//
// It models a browser, not just call recording, so tests can assert what really exists
// afterwards:
//   - windows.create makes a window with one tab; removing a window's last tab removes the
//     window (and fires windows.onRemoved), exactly the behavior the last-tab rule guards;
//   - tabs.create / windows.create fire onCreated BEFORE their promise resolves, and every API
//     call yields to the macrotask queue, so concurrent callers really interleave;
//   - tabs.create defaults to active:true and windows.create to focused:true, like Chrome, so
//     a worker that forgets active:false / focused:false visibly steals focus;
//   - storage areas are asynchronous and store structured clones;
//   - a navigation commits on a later turn (pendingUrl → url) and fires tabs.onUpdated.
//
// The `_browser` handle plays the user and the test: open/close tabs, kill the worker (drop
// all listeners while storage and tabs survive), fire alarms, inject faults.

export const tick = () => new Promise((resolve) => setImmediate(resolve));

class FakeEvent {
  constructor() {
    this.listeners = [];
  }
  addListener(fn) {
    this.listeners.push(fn);
  }
  removeListener(fn) {
    this.listeners = this.listeners.filter((l) => l !== fn);
  }
  hasListener(fn) {
    return this.listeners.includes(fn);
  }
  hasListeners() {
    return this.listeners.length > 0;
  }
  dispatch(...args) {
    return [...this.listeners].map((l) => l(...args));
  }
}

const clone = (v) => (v === undefined ? undefined : structuredClone(v));

class FakeStorageArea {
  constructor(areaName, globalOnChanged) {
    this.areaName = areaName;
    this.data = new Map();
    this.onChanged = new FakeEvent();
    this._global = globalOnChanged;
  }
  _fire(changes) {
    if (Object.keys(changes).length === 0) return;
    this.onChanged.dispatch(clone(changes));
    this._global.dispatch(clone(changes), this.areaName);
  }
  async get(keys) {
    await tick();
    const out = {};
    if (keys === null || keys === undefined) {
      for (const [k, v] of this.data) out[k] = clone(v);
    } else if (typeof keys === "string") {
      if (this.data.has(keys)) out[keys] = clone(this.data.get(keys));
    } else if (Array.isArray(keys)) {
      for (const k of keys) if (this.data.has(k)) out[k] = clone(this.data.get(k));
    } else {
      for (const [k, dflt] of Object.entries(keys)) out[k] = this.data.has(k) ? clone(this.data.get(k)) : dflt;
    }
    return out;
  }
  async set(items) {
    await tick();
    const changes = {};
    for (const [k, v] of Object.entries(items)) {
      changes[k] = { oldValue: clone(this.data.get(k)), newValue: clone(v) };
      this.data.set(k, clone(v));
    }
    this._fire(changes);
  }
  async remove(keys) {
    await tick();
    const changes = {};
    for (const k of Array.isArray(keys) ? keys : [keys]) {
      if (this.data.has(k)) {
        changes[k] = { oldValue: clone(this.data.get(k)) };
        this.data.delete(k);
      }
    }
    this._fire(changes);
  }
  async clear() {
    await this.remove([...this.data.keys()]);
  }
  /** Synchronous peek for assertions. */
  snapshot() {
    return Object.fromEntries([...this.data].map(([k, v]) => [k, clone(v)]));
  }
}

export function createFakeChrome({ extensionId = "tabwardenfakeextensionid", version = "0.1.0" } = {}) {
  const windows = new Map(); // id -> {id, type, focused, incognito, tabIds: []}
  const tabs = new Map(); // id -> {id, windowId, url, pendingUrl?, title, active, incognito, openerTabId?, status}
  let nextWindowId = 1;
  let nextTabId = 101; // a different range from window ids, so mixing them up fails tests
  const calls = []; // {api, args} for every extension API call the worker made
  const faults = new Map(); // api name -> {left, message}: remaining injected failures
  const groups = new Map(); // id -> {id, windowId, title, collapsed, color}
  let nextGroupId = 501;

  const events = {
    tabsCreated: new FakeEvent(),
    tabsUpdated: new FakeEvent(),
    tabsRemoved: new FakeEvent(),
    windowsCreated: new FakeEvent(),
    windowsRemoved: new FakeEvent(),
    runtimeMessage: new FakeEvent(),
    runtimeStartup: new FakeEvent(),
    runtimeInstalled: new FakeEvent(),
    alarm: new FakeEvent(),
    storageChanged: new FakeEvent(),
    debuggerDetach: new FakeEvent(),
    debuggerEvent: new FakeEvent(),
  };
  const attached = new Set(); // tab ids with the worker's debugger attached
  const busy = new Set(); // tab ids where "DevTools" holds the debugger
  // Pages with an unsent draft (armBeforeUnload): their remove raises a beforeunload prompt and
  // waits until it is accepted; told to a debugger session only if Page.enable ran before.
  const drafts = new Map(); // tabId -> {enabled, accept: resolve of the pending remove}
  let pageHandler = async (tabId, method) => {
    throw new Error(`no page scripted for ${method} on tab ${tabId}`);
  };

  // push: a new history entry (a load); false for a move through the history (goBack,
  // goForward) or a reload.
  function navigateTab(tabId, url, push = true) {
    const t = tabs.get(tabId);
    if (push) {
      t.history = [...t.history.slice(0, t.at + 1), url];
      t.at = t.history.length - 1;
    }
    t.pendingUrl = url;
    t.status = "loading";
    events.tabsUpdated.dispatch(tabId, { status: "loading" }, tabView(t));
    scheduleCommit(tabId);
  }

  function moveInHistory(tabId, by) {
    const t = tabs.get(tabId);
    if (!t) throw new Error(`No tab with id: ${tabId}.`);
    const to = t.at + by;
    if (to < 0 || to >= t.history.length) throw new Error("Cannot find a next page in history.");
    t.at = to;
    navigateTab(tabId, t.history[to], false);
  }

  // ---- browser model (synchronous, "browser side") ----

  function tabView(t) {
    const w = windows.get(t.windowId);
    const v = {
      id: t.id,
      windowId: t.windowId,
      index: w ? w.tabIds.indexOf(t.id) : -1,
      url: t.url,
      title: t.title,
      active: t.active,
      incognito: t.incognito,
      status: t.status,
      pinned: false,
      highlighted: t.active,
      groupId: t.groupId ?? -1,
    };
    if (t.pendingUrl !== undefined) v.pendingUrl = t.pendingUrl;
    if (t.openerTabId !== undefined) v.openerTabId = t.openerTabId;
    return v;
  }

  function windowView(w, populate) {
    const v = { id: w.id, type: w.type, focused: w.focused, incognito: w.incognito, state: "normal", alwaysOnTop: false };
    if (populate) v.tabs = w.tabIds.map((id) => tabView(tabs.get(id)));
    return v;
  }

  function focusWindow(id) {
    for (const w of windows.values()) w.focused = w.id === id;
  }

  function activate(tabId) {
    const t = tabs.get(tabId);
    for (const id of windows.get(t.windowId).tabIds) tabs.get(id).active = id === tabId;
  }

  // Chrome commits a navigation later: the tab first shows pendingUrl, then url + title.
  function scheduleCommit(tabId) {
    setImmediate(() => {
      const t = tabs.get(tabId);
      if (!t || t.pendingUrl === undefined) return;
      t.url = t.pendingUrl;
      delete t.pendingUrl;
      t.status = "complete";
      t.title = t.url === "about:blank" ? "" : `Title of ${t.url}`;
      events.tabsUpdated.dispatch(tabId, { status: "complete", url: t.url, title: t.title }, tabView(t));
    });
  }

  function addTab(windowId, { url = "chrome://newtab/", active = true, openerTabId, title, committed = false } = {}) {
    const w = windows.get(windowId);
    if (!w) throw new Error(`No window with id: ${windowId}.`);
    const t = {
      id: nextTabId++,
      windowId,
      url: committed ? url : "",
      title: committed ? (title ?? `Title of ${url}`) : "",
      active: false,
      incognito: w.incognito,
      status: committed ? "complete" : "loading",
      // The tab's history (urls) and where it is in it.
      history: [url],
      at: 0,
    };
    if (!committed) t.pendingUrl = url;
    if (openerTabId !== undefined) t.openerTabId = openerTabId;
    tabs.set(t.id, t);
    w.tabIds.push(t.id);
    if (active || w.tabIds.length === 1) activate(t.id);
    events.tabsCreated.dispatch(tabView(t));
    if (!committed) scheduleCommit(t.id);
    return t.id;
  }

  function addWindow({ url, type = "normal", focused = true, incognito = false, committed = false, openerTabId } = {}) {
    const w = { id: nextWindowId++, type, focused: false, incognito, tabIds: [] };
    windows.set(w.id, w);
    if (focused) focusWindow(w.id);
    events.windowsCreated.dispatch(windowView(w, false));
    const tabId = addTab(w.id, { url: url ?? "chrome://newtab/", active: true, committed, openerTabId });
    return { windowId: w.id, tabId };
  }

  // Chrome removes a group when its last tab leaves it.
  function dropEmptyGroups() {
    for (const id of [...groups.keys()]) if (![...tabs.values()].some((t) => t.groupId === id)) groups.delete(id);
  }

  // chrome.tabs.group: Chrome allows groups in normal windows only ("Tabs can only be moved to
  // and from normal windows."), and never focuses or activates anything.
  function groupTabs({ tabIds, groupId, createProperties } = {}) {
    const ids = Array.isArray(tabIds) ? tabIds : [tabIds];
    for (const id of ids) if (!tabs.has(id)) throw new Error(`No tab with id: ${id}.`);
    let g;
    if (groupId !== undefined) {
      g = groups.get(groupId);
      if (!g) throw new Error(`No group with id: ${groupId}.`);
    } else {
      const windowId = createProperties?.windowId ?? tabs.get(ids[0]).windowId;
      g = { id: nextGroupId++, windowId, title: "", collapsed: false, color: "grey" };
      groups.set(g.id, g);
    }
    if (windows.get(g.windowId)?.type !== "normal") {
      groups.delete(g.id);
      throw new Error("Tabs can only be moved to and from normal windows.");
    }
    for (const id of ids) {
      const t = tabs.get(id);
      if (windows.get(t.windowId)?.type !== "normal") throw new Error("Tabs can only be moved to and from normal windows.");
      if (t.windowId !== g.windowId) throw new Error("fake: moving tabs across windows into a group is not modeled");
      t.groupId = g.id;
    }
    dropEmptyGroups();
    return g.id;
  }

  function removeTab(tabId) {
    const t = tabs.get(tabId);
    if (!t) throw new Error(`No tab with id: ${tabId}.`);
    const w = windows.get(t.windowId);
    const idx = w.tabIds.indexOf(tabId);
    w.tabIds.splice(idx, 1);
    tabs.delete(tabId);
    dropEmptyGroups();
    const closingWindow = w.tabIds.length === 0;
    if (t.active && !closingWindow) activate(w.tabIds[Math.min(idx, w.tabIds.length - 1)]);
    events.tabsRemoved.dispatch(tabId, { windowId: w.id, isWindowClosing: closingWindow });
    if (closingWindow) {
      windows.delete(w.id);
      events.windowsRemoved.dispatch(w.id);
    }
  }

  async function api(name, args, fn) {
    calls.push({ api: name, args: clone(args) });
    await tick();
    const fault = faults.get(name);
    if (fault && fault.left > 0) {
      fault.left--;
      throw new Error(fault.message ?? `injected failure in ${name}`);
    }
    const result = fn();
    await tick();
    return result;
  }

  // ---- the chrome.* surface ----

  const chrome = {
    runtime: {
      id: extensionId,
      getManifest: () => ({ manifest_version: 3, name: "tabwarden", version }),
      onMessage: events.runtimeMessage,
      onStartup: events.runtimeStartup,
      onInstalled: events.runtimeInstalled,
      // Messages from the popup: sender is our own extension page, not a tab.
      sendMessage(msg) {
        return new Promise((resolve) => {
          let done = false;
          let async = false;
          const sendResponse = (v) => {
            if (!done) {
              done = true;
              resolve(clone(v));
            }
          };
          const sender = { id: extensionId, url: `chrome-extension://${extensionId}/popup.html` };
          for (const r of events.runtimeMessage.dispatch(clone(msg), sender, sendResponse)) if (r === true) async = true;
          if (!async && !done) resolve(undefined);
        });
      },
    },
    tabs: {
      onCreated: events.tabsCreated,
      onUpdated: events.tabsUpdated,
      onRemoved: events.tabsRemoved,
      get: (tabId) =>
        api("tabs.get", { tabId }, () => {
          const t = tabs.get(tabId);
          if (!t) throw new Error(`No tab with id: ${tabId}.`);
          return tabView(t);
        }),
      query: (q = {}) =>
        api("tabs.query", q, () =>
          [...windows.values()]
            .filter((w) => q.windowId === undefined || w.id === q.windowId)
            .flatMap((w) => w.tabIds.map((id) => tabView(tabs.get(id))))
            .filter((t) => q.active === undefined || t.active === q.active)
            .filter((t) => q.groupId === undefined || t.groupId === q.groupId),
        ),
      group: (opts) => api("tabs.group", opts, () => groupTabs(opts)),
      ungroup: (ids) =>
        api("tabs.ungroup", { ids }, () => {
          for (const id of Array.isArray(ids) ? ids : [ids]) {
            if (!tabs.has(id)) throw new Error(`No tab with id: ${id}.`);
            tabs.get(id).groupId = -1;
          }
          dropEmptyGroups();
        }),
      create: (props = {}) =>
        api("tabs.create", props, () => {
          const windowId = props.windowId ?? [...windows.values()].find((w) => w.focused)?.id;
          // Fires tabs.onCreated synchronously, i.e. before this promise resolves.
          const id = addTab(windowId, { url: props.url ?? "chrome://newtab/", active: props.active !== false, openerTabId: props.openerTabId });
          return tabView(tabs.get(id));
        }),
      update: (tabId, props = {}) =>
        api("tabs.update", { tabId, ...props }, () => {
          const t = tabs.get(tabId);
          if (!t) throw new Error(`No tab with id: ${tabId}.`);
          if (props.active) activate(tabId);
          if (props.url !== undefined) navigateTab(tabId, props.url);
          return tabView(t);
        }),
      // The history moves: Chrome's words when there is no entry that way.
      goBack: (tabId) => api("tabs.goBack", { tabId }, () => moveInHistory(tabId, -1)),
      goForward: (tabId) => api("tabs.goForward", { tabId }, () => moveInHistory(tabId, 1)),
      reload: (tabId, props = {}) =>
        api("tabs.reload", { tabId, ...props }, () => {
          const t = tabs.get(tabId);
          if (!t) throw new Error(`No tab with id: ${tabId}.`);
          navigateTab(tabId, t.url, false);
        }),
      remove: (ids) =>
        api("tabs.remove", { ids }, () => {
          const held = [];
          for (const id of Array.isArray(ids) ? ids : [ids]) {
            const d = drafts.get(id);
            if (!d) {
              removeTab(id);
              continue;
            }
            // The prompt shows; the remove returns once it is accepted (never, unanswered).
            held.push(
              new Promise((resolve) => {
                d.accept = () => {
                  drafts.delete(id);
                  removeTab(id);
                  resolve();
                };
              }),
            );
            if (d.enabled && attached.has(id)) events.debuggerEvent.dispatch({ tabId: id }, "Page.javascriptDialogOpening", { type: "beforeunload", message: "" });
          }
          return Promise.all(held).then(() => undefined);
        }),
    },
    windows: {
      onCreated: events.windowsCreated,
      onRemoved: events.windowsRemoved,
      get: (windowId, opts = {}) =>
        api("windows.get", { windowId, ...opts }, () => {
          const w = windows.get(windowId);
          if (!w) throw new Error(`No window with id: ${windowId}.`);
          return windowView(w, opts.populate);
        }),
      getAll: (opts = {}) => api("windows.getAll", opts, () => [...windows.values()].map((w) => windowView(w, opts.populate))),
      create: (props = {}) =>
        api("windows.create", props, () => {
          const url = Array.isArray(props.url) ? props.url[0] : props.url;
          const { windowId } = addWindow({ url, type: props.type ?? "normal", focused: props.focused !== false, incognito: !!props.incognito });
          return windowView(windows.get(windowId), true);
        }),
    },
    // chrome.debugger: attach/sendCommand/detach against a scripted page (_browser.setPage).
    debugger: {
      onDetach: events.debuggerDetach,
      onEvent: events.debuggerEvent,
      attach: (target, version) =>
        api("debugger.attach", { target, version }, () => {
          const t = tabs.get(target.tabId);
          if (!t) throw new Error(`No tab with given id ${target.tabId}.`);
          if (attached.has(target.tabId)) throw new Error(`Another debugger is already attached to the tab with id: ${target.tabId}.`);
          if (busy.has(target.tabId)) throw new Error(`Another debugger is already attached to the tab with id: ${target.tabId}.`);
          attached.add(target.tabId);
        }),
      detach: (target) =>
        api("debugger.detach", { target }, () => {
          if (!attached.delete(target.tabId)) throw new Error(`Debugger is not attached to the tab with id: ${target.tabId}.`);
        }),
      sendCommand: (target, method, params) => {
        calls.push({ api: "debugger.sendCommand", args: clone({ target, method, params }) });
        return (async () => {
          await tick();
          if (!attached.has(target.tabId)) throw new Error(`Debugger is not attached to the tab with id: ${target.tabId}.`);
          const d = drafts.get(target.tabId);
          if (d && method === "Page.enable") {
            d.enabled = true; // the browser turns the Page events on as the command arrives
            if (d.holdEnable) return new Promise(() => {}); // the renderer never answers
            return {};
          }
          if (d && method === "Page.handleJavaScriptDialog") {
            if (!d.accept) throw new Error("No dialog is showing");
            if (params?.accept) d.accept();
            else d.accept = null; // stay on the page: the remove that raised it stays pending
            return {};
          }
          // The tab's history, as Chrome answers it (entry ids: index + 1).
          const t = tabs.get(target.tabId);
          if (method === "Page.getNavigationHistory") {
            return clone({ currentIndex: t.at, entries: t.history.map((url, i) => ({ id: i + 1, url, title: "" })) });
          }
          if (method === "Page.navigateToHistoryEntry") {
            const to = params?.entryId - 1;
            if (!(to >= 0 && to < t.history.length)) throw new Error("No entry with passed id");
            t.at = to;
            navigateTab(target.tabId, t.history[to], false);
            return {};
          }
          const result = await pageHandler(target.tabId, method, clone(params));
          await tick();
          return clone(result);
        })();
      },
    },
    tabGroups: {
      get: (groupId) =>
        api("tabGroups.get", { groupId }, () => {
          const g = groups.get(groupId);
          if (!g) throw new Error(`No group with id: ${groupId}.`);
          return { ...g };
        }),
      update: (groupId, props) =>
        api("tabGroups.update", { groupId, ...props }, () => {
          const g = groups.get(groupId);
          if (!g) throw new Error(`No group with id: ${groupId}.`);
          Object.assign(g, props);
          return { ...g };
        }),
    },
    storage: {
      onChanged: events.storageChanged,
    },
    alarms: {
      onAlarm: events.alarm,
      _alarms: new Map(),
      create(name, info) {
        calls.push({ api: "alarms.create", args: { name, ...info } });
        this._alarms.set(name, { name, ...info });
        return tick();
      },
      async get(name) {
        await tick();
        return this._alarms.get(name);
      },
      async getAll() {
        await tick();
        return [...this._alarms.values()];
      },
      async clear(name) {
        await tick();
        return this._alarms.delete(name);
      },
    },
  };
  chrome.storage.session = new FakeStorageArea("session", events.storageChanged);
  chrome.storage.local = new FakeStorageArea("local", events.storageChanged);

  // ---- the test's hands ----

  chrome._browser = {
    calls,
    events,
    /** A window the user (not the worker) opens; returns {windowId, tabId}. Committed at once. */
    openWindow: (opts = {}) => addWindow({ committed: true, ...opts }),
    /** A tab the user (or a page, via window.open) opens; returns its id. Committed at once. */
    openTab: (windowId, opts = {}) => addTab(windowId, { committed: true, ...opts }),
    /** The user drags a tab into another window, or tears it off into a new one ("new"). */
    moveTab(tabId, to) {
      const t = tabs.get(tabId);
      const from = windows.get(t.windowId);
      let dest;
      if (to === "new") {
        dest = { id: nextWindowId++, type: "normal", focused: false, incognito: from.incognito, tabIds: [] };
        windows.set(dest.id, dest);
        events.windowsCreated.dispatch(windowView(dest, false));
      } else dest = windows.get(to);
      from.tabIds.splice(from.tabIds.indexOf(tabId), 1);
      dest.tabIds.push(tabId);
      t.windowId = dest.id;
      if (from.tabIds.length === 0) {
        windows.delete(from.id);
        events.windowsRemoved.dispatch(from.id);
      }
      return dest.id;
    },
    /** Chrome stops reporting a tab's openerTabId (it does, e.g. after the opener navigates). */
    dropOpener(tabId) {
      delete tabs.get(tabId).openerTabId;
    },
    /** The user closes a tab. */
    closeTab: (tabId) => removeTab(tabId),
    /** The user navigates a tab; commits on a later turn. */
    navigate: (tabId, url) => navigateTab(tabId, url),
    /**
     * Scripts the page side of chrome.debugger: handler(tabId, method, params) answers every
     * sendCommand (or throws, as Chrome does).
     */
    setPage(handler) {
      pageHandler = handler;
    },
    /** Tabs the worker's debugger is attached to now. */
    attachedTabs: () => [...attached].sort((a, b) => a - b),
    /**
     * The page arms a beforeunload handler after the user typed (an unsent draft). holdEnable:
     * its renderer is busy, so Page.enable takes effect (the browser tells the prompt) but is
     * never answered.
     */
    armBeforeUnload: (tabId, { holdEnable = false } = {}) => drafts.set(tabId, { enabled: false, accept: null, holdEnable }),
    /** Whether a beforeunload prompt is showing on the tab. */
    promptShowing: (tabId) => !!drafts.get(tabId)?.accept,
    /** DevTools is open on the tab: the worker's attach fails. */
    holdDebugger: (tabId) => busy.add(tabId),
    tab: (id) => (tabs.has(id) ? tabView(tabs.get(id)) : undefined),
    group: (id) => (groups.has(id) ? { ...groups.get(id) } : undefined),
    groups: () => [...groups.values()].map((g) => ({ ...g })),
    /** The user groups tabs themselves. */
    userGroup: (tabIds) => groupTabs({ tabIds }),
    tabIds: () => [...tabs.keys()].sort((a, b) => a - b),
    tabsIn: (windowId) => (windows.has(windowId) ? windows.get(windowId).tabIds.map((id) => tabView(tabs.get(id))) : []),
    window: (id) => (windows.has(id) ? windowView(windows.get(id), true) : undefined),
    windowIds: () => [...windows.keys()].sort((a, b) => a - b),
    focusedWindowId: () => [...windows.values()].find((w) => w.focused)?.id,
    /**
     * Next call(s) to `api` (e.g. "tabs.query") reject, with Chrome's wording when given:
     * failNext("tabs.remove", 1, "Tabs cannot be edited right now (user may be dragging a tab).")
     * fails one remove and leaves the tab open, as Chrome does mid-drag.
     */
    failNext: (name, times = 1, message) => faults.set(name, { left: times, message }),
    /** Chrome terminates the service worker: listeners vanish, tabs and storage stay. */
    killWorker() {
      for (const e of Object.values(events)) e.listeners = [];
      chrome.storage.session.onChanged.listeners = [];
      chrome.storage.local.onChanged.listeners = [];
    },
    fireAlarm(name) {
      events.alarm.dispatch({ name, scheduledTime: Date.now() });
    },
    listenerCount: () => Object.values(events).reduce((n, e) => n + e.listeners.length, 0),
  };
  return chrome;
}
