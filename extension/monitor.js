// tabwarden Session Monitor, browser side: Chrome tab groups titled by each session's purpose.
//
// The agent publishes the sessions placed on this profile (the `sessions` command) whenever
// they or their windows change; the worker stores them for the popup and calls syncGroups,
// which puts each session's pages in a tab group titled by its purpose, where the user sees
// them. Rules:
//   * only tabs this extension recorded as owned (opened or spawned) are ever grouped: never a
//     bound user tab, never a tab the host merely names;
//   * a tab the user put in a group of their own is left there;
//   * a window of popups cannot hold groups (Chrome allows groups in normal windows only):
//     its tabs are skipped;
//   * nothing is focused or activated;
//   * a tab that leaves the session's set (released as Keep, the session gone) is ungrouped, but
//     only a tab this code grouped and that is still in that group.
// State (which group holds which tabs, per session and window) lives in chrome.storage.session
// under GROUPS_KEY, so a restarted worker ungroups what an earlier one grouped.

export const GROUPS_KEY = "groups";
export const MAX_GROUP_TITLE = 80;
const NO_GROUP = -1;

const OWNED_KINDS = new Set(["opened", "spawned"]);
const kindOf = (rec) => rec?.kind ?? (rec?.via === "adopt" ? "spawned" : "opened");

/** The group title for a session: its purpose, clipped (falls back to its name). */
export function groupTitle(s) {
  const t = String(s?.purpose || s?.name || "tabwarden").trim();
  return t.length > MAX_GROUP_TITLE ? `${t.slice(0, MAX_GROUP_TITLE - 1)}…` : t;
}

/**
 * The tabs each session's group should hold (pure): for every session, the tab ids of its
 * windows that the extension recorded as owned. Map key "<namespace>/<name>" → {title, tabIds}.
 */
export function desiredGroups(sessions, records) {
  const owned = new Set();
  for (const r of records ?? []) if (Number.isInteger(r?.tabId) && OWNED_KINDS.has(kindOf(r))) owned.add(r.tabId);
  const out = new Map();
  for (const s of Array.isArray(sessions) ? sessions : []) {
    const tabIds = [];
    for (const w of s?.windows ?? []) {
      const id = Number(w?.tabId);
      if (Number.isInteger(id) && owned.has(id) && !tabIds.includes(id)) tabIds.push(id);
    }
    if (tabIds.length) out.set(`${s.namespace}/${s.name}`, { title: groupTitle(s), tabIds });
  }
  return out;
}

async function attempt(p) {
  try {
    return await p;
  } catch {
    return undefined;
  }
}

/**
 * Makes Chrome's tab groups match the published sessions. chrome needs tabs (get, query, group,
 * ungroup), windows.get and tabGroups (get, update); store is chrome.storage.session. Returns
 * the new state ({"<session>|<windowId>": {groupId, tabIds}}). Failures of single tabs are
 * skipped (the next publish tries again); nothing here throws for a tab that vanished.
 */
export async function syncGroups(chrome, store, sessions, records, log = console) {
  if (!chrome.tabGroups || !chrome.tabs.group) return {}; // no permission: the popup still works
  const prev = (await store.get(GROUPS_KEY))?.[GROUPS_KEY] ?? {};
  const ourGroups = new Set(Object.values(prev).map((g) => g.groupId));
  // Bucket the wanted tabs by session and Chrome window (a group lives in one window).
  const buckets = new Map();
  for (const [key, want] of desiredGroups(sessions, records)) {
    for (const tabId of want.tabIds) {
      const tab = await attempt(chrome.tabs.get(tabId));
      if (!tab || tab.incognito) continue;
      const gid = tab.groupId ?? NO_GROUP;
      if (gid !== NO_GROUP && !ourGroups.has(gid)) continue; // the user's own group: leave it
      const win = await attempt(chrome.windows.get(tab.windowId));
      if (win?.type !== "normal") continue; // popups cannot hold groups
      const b = `${key}|${tab.windowId}`;
      if (!buckets.has(b)) buckets.set(b, { title: want.title, windowId: tab.windowId, tabs: [] });
      buckets.get(b).tabs.push(tab);
    }
  }
  const next = {};
  for (const [b, { title, windowId, tabs }] of buckets) {
    let groupId = prev[b]?.groupId;
    if (groupId !== undefined) {
      const g = await attempt(chrome.tabGroups.get(groupId));
      if (!g || g.windowId !== windowId) groupId = undefined;
    }
    try {
      if (groupId === undefined) {
        groupId = await chrome.tabs.group({ tabIds: tabs.map((t) => t.id), createProperties: { windowId } });
        await chrome.tabGroups.update(groupId, { title, collapsed: false });
      } else {
        const missing = tabs.filter((t) => t.groupId !== groupId).map((t) => t.id);
        if (missing.length) await chrome.tabs.group({ groupId, tabIds: missing });
        const g = await attempt(chrome.tabGroups.get(groupId));
        if (g && g.title !== title) await chrome.tabGroups.update(groupId, { title });
      }
      next[b] = { groupId, tabIds: tabs.map((t) => t.id) };
    } catch (e) {
      log.warn?.(`tabwarden: grouping ${b} failed:`, e?.message ?? e);
      if (prev[b]) next[b] = prev[b]; // keep what we know, to ungroup it later
    }
  }
  // Ungroup what this code grouped before and is no longer wanted there.
  for (const [b, old] of Object.entries(prev)) {
    const keep = new Set(next[b]?.groupId === old.groupId ? next[b].tabIds : []);
    const leaving = [];
    for (const tabId of old.tabIds ?? []) {
      if (keep.has(tabId)) continue;
      const tab = await attempt(chrome.tabs.get(tabId));
      if (tab && tab.groupId === old.groupId) leaving.push(tabId);
    }
    if (leaving.length) {
      try {
        await chrome.tabs.ungroup(leaving);
      } catch (e) {
        log.warn?.(`tabwarden: ungrouping ${leaving.join(",")} failed:`, e?.message ?? e);
        if (!next[b]) next[b] = { groupId: old.groupId, tabIds: leaving };
      }
    }
  }
  await store.set({ [GROUPS_KEY]: next });
  return next;
}
