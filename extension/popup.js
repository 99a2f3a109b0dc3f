// tabwarden popup: pairing, connection state, and the Session Monitor.
//
// Everything shown comes from storage that the service worker maintains
// (chrome.storage.session: conn, sessions; chrome.storage.local: port, pairedAt), and the view
// re-renders on storage.onChanged, so the popup never has to ask the worker for state and
// works even while the worker is asleep. The popup never reads the pairing key.
//
// All host-supplied strings are inserted with textContent, never as HTML.

export const DEFAULT_PORT = 47321;

/** The connection panel's model, from the stored records (pure, tested). */
export function connView(conn = {}, local = {}) {
  const paired = !!local.pairedAt || conn.state === "connected";
  let state = conn.state ?? (paired ? "disconnected" : "unpaired");
  if (state === "unpaired" && paired) state = "disconnected";
  const labels = {
    connected: "connected",
    connecting: "connecting…",
    disconnected: "disconnected (retrying)",
    unauthorized: "unauthorized: pair again",
    host_unverified: "host failed to prove itself (not retrying)",
    unpaired: "not paired",
  };
  return {
    state,
    label: labels[state] ?? state,
    epoch: conn.state === "connected" && conn.epoch != null ? String(conn.epoch) : "—",
    port: String(conn.port ?? local.port ?? DEFAULT_PORT),
    error: conn.lastError ? String(conn.lastError) : "—",
    hasError: !!conn.lastError || state === "host_unverified",
    // Forget is offered whenever there is a pairing to forget.
    canForget: state !== "unpaired",
  };
}

/**
 * The Session Monitor's model (pure, tested). A spawned window without disposition is
 * unacknowledged (the agent marks it; an older agent's entries are judged by source and
 * disposition); each unacknowledged window carries the command that acknowledges it.
 */
export function sessionsView(sessions) {
  return (Array.isArray(sessions) ? sessions : []).map((s) => {
    const windows = (s.windows ?? []).map((w) => {
      const unacknowledged = w.unacknowledged === true || (w.unacknowledged === undefined && !w.disposition);
      return {
        name: w.name || "—",
        tabId: w.tabId || "—",
        source: w.source || "—",
        phase: w.phase || "—",
        disposition: unacknowledged ? "unacknowledged" : w.disposition || "—",
        unacknowledged,
      };
    });
    const unacked = windows.filter((w) => w.unacknowledged);
    return {
      title: [s.namespace, s.name].filter(Boolean).join("/") || "(unnamed)",
      phase: s.phase || "—",
      thread: s.thread || "—",
      purpose: s.purpose || "—",
      windows,
      unacknowledged: unacked.length,
      hints: unacked.map(
        (w) => `kubectl patch browserwindow ${w.name} -n ${s.namespace || "default"} --type=merge -p '{"spec":{"disposition":"Close"}}'`,
      ),
    };
  });
}

// ---- DOM (only in the real popup) -------------------------------------------------------------

function el(tag, props = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function renderConnection(conn, local) {
  const v = connView(conn, local);
  const badge = document.getElementById("state");
  badge.textContent = v.state === "unpaired" ? "not paired" : v.state;
  badge.className = `badge ${v.state}`;
  document.getElementById("conn-state").textContent = v.label;
  document.getElementById("conn-epoch").textContent = v.epoch;
  document.getElementById("conn-port").textContent = v.port;
  const err = document.getElementById("conn-error");
  err.textContent = v.error;
  err.className = v.hasError ? "error" : "";
  document.getElementById("forget").disabled = !v.canForget;
  // A pairing's "Connecting…" ends when the connection says so.
  const result = document.getElementById("pair-result");
  if (result && v.state === "connected" && result.textContent === PAIRED_CONNECTING) result.textContent = PAIRED_CONNECTED;
}

const PAIRED_CONNECTING = "Paired. Connecting…";
const PAIRED_CONNECTED = "Paired. Connected.";

function renderSessions(sessions) {
  const box = document.getElementById("sessions");
  const model = sessionsView(sessions);
  if (model.length === 0) {
    box.replaceChildren(el("p", { class: "empty", text: "No sessions are driving this profile." }));
    return;
  }
  box.replaceChildren(
    ...model.map((s) => {
      const rows = s.windows.map((w) =>
        el("tr", { class: w.unacknowledged ? "window unacknowledged" : "window" }, [
          el("td", { text: w.name, class: "id" }),
          el("td", { text: w.tabId, class: "tab" }),
          el("td", { text: w.source, class: "word" }),
          el("td", { text: w.phase, class: "word" }),
          el("td", { text: w.unacknowledged ? "⚠ unacknowledged" : w.disposition, class: w.unacknowledged ? "word unacknowledged" : "word" }),
        ]),
      );
      const table = rows.length
        ? el("table", {}, [
            el("thead", {}, [el("tr", {}, ["window", "tab", "source", "phase", "disposition"].map((h) => el("th", { text: h })))]),
            el("tbody", {}, rows),
          ])
        : el("p", { class: "empty", text: s.phase === "Finished" || s.phase === "Finishing" ? "Ended: its pages are closed, released or detached." : "No windows yet." });
      const warn = s.unacknowledged
        ? [
            el("p", {
              class: "unacknowledged warning",
              text: `${s.unacknowledged} spawned window(s) unacknowledged: the agent is held until each is given a disposition (Keep, Close or Temporary), e.g.`,
            }),
            ...s.hints.map((h) => el("code", { class: "hint", text: h })),
          ]
        : [];
      return el("div", { class: "session", "data-session": s.title }, [
        el("div", { class: "session-head" }, [el("span", { class: "session-name", text: s.title }), el("span", { class: "badge", text: s.phase })]),
        el("div", { class: "meta thread", text: `thread: ${s.thread}` }),
        el("div", { class: "meta purpose", text: `purpose: ${s.purpose}` }),
        table,
        ...warn,
      ]);
    }),
  );
}

async function refresh() {
  const [{ conn, sessions }, local] = await Promise.all([
    chrome.storage.session.get(["conn", "sessions"]),
    chrome.storage.local.get(["port", "pairedAt"]),
  ]);
  renderConnection(conn, local);
  renderSessions(sessions);
  return local;
}

function wire() {
  const form = document.getElementById("pair-form");
  const result = document.getElementById("pair-result");
  const portInput = document.getElementById("pair-port");

  refresh().then((local) => {
    if (Number.isInteger(local.port)) portInput.value = String(local.port);
  });
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === "session" && ("conn" in changes || "sessions" in changes)) refresh();
    if (area === "local" && ("port" in changes || "pairedAt" in changes)) refresh();
  });

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const code = document.getElementById("pair-code").value.trim();
    const port = Number(portInput.value || DEFAULT_PORT);
    result.textContent = "Pairing…";
    result.className = "";
    try {
      const r = await chrome.runtime.sendMessage({ type: "pair", code, port });
      if (r?.ok) {
        result.textContent = PAIRED_CONNECTING;
        result.className = "ok";
        document.getElementById("pair-code").value = "";
      } else {
        result.textContent = r?.error ?? "Pairing failed.";
        result.className = "error";
      }
    } catch (e) {
      result.textContent = `Pairing failed: ${e?.message ?? e}`;
      result.className = "error";
    }
  });

  document.getElementById("reconnect").addEventListener("click", () => {
    chrome.runtime.sendMessage({ type: "reconnect" }).catch(() => {});
  });

  document.getElementById("forget").addEventListener("click", async () => {
    const out = document.getElementById("forget-result");
    try {
      const r = await chrome.runtime.sendMessage({ type: "forget" });
      out.textContent = r?.ok
        ? r.hostTold
          ? "Pairing forgotten here and by the agent."
          : "Pairing forgotten here (the agent was not connected: run `tabwarden unpair` there)."
        : (r?.error ?? "Forget failed.");
      out.className = r?.ok ? "ok" : "error";
    } catch (e) {
      out.textContent = `Forget failed: ${e?.message ?? e}`;
      out.className = "error";
    }
  });
}

if (typeof document !== "undefined" && globalThis.chrome?.storage) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wire);
  else wire();
}
