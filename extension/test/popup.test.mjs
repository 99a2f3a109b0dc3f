// The popup's view models (the DOM wiring only runs inside Chrome).

import test from "node:test";
import assert from "node:assert/strict";
import { connView, sessionsView } from "../popup.js";

test("connection view: unpaired, connected with epoch, error surfaced", () => {
  assert.equal(connView({}, {}).state, "unpaired");
  assert.equal(connView({}, {}).port, "47321");
  const c = connView({ state: "connected", epoch: 3, port: 5555, lastError: null }, { pairedAt: 1 });
  assert.deepEqual([c.state, c.epoch, c.port, c.hasError], ["connected", "3", "5555", false]);
  const d = connView({ state: "disconnected", epoch: null, lastError: "closed (1006)" }, { pairedAt: 1, port: 47321 });
  assert.deepEqual([d.state, d.epoch, d.error, d.hasError], ["disconnected", "—", "closed (1006)", true]);
  assert.match(connView({ state: "unauthorized" }, { pairedAt: 1 }).label, /pair again/);
});

test("connection view: a host that failed to prove itself is shown as such; Forget only with a pairing", () => {
  const v = connView({ state: "host_unverified", lastError: "host failed to prove itself (wrong proof); not retrying" }, { pairedAt: 1 });
  assert.equal(v.state, "host_unverified");
  assert.match(v.label, /host failed to prove itself/);
  assert.match(v.error, /host failed to prove itself/);
  assert.equal(v.hasError, true);
  assert.equal(v.canForget, true);
  assert.equal(connView({ state: "unpaired" }, {}).canForget, false);
  assert.equal(connView({ state: "connected", epoch: 1 }, { pairedAt: 1 }).canForget, true);
});

test("session monitor view: names, purpose, windows; a window without disposition is unacknowledged", () => {
  const v = sessionsView([
    {
      namespace: "default",
      name: "fill-form",
      thread: "t-42",
      purpose: "fill the contact form",
      phase: "Active",
      windows: [
        { name: "fill-form-main", tabId: "101", source: "Open", disposition: "Temporary" },
        { name: "fill-form-compose", tabId: "102", source: "Spawned", disposition: "" },
      ],
    },
  ]);
  assert.equal(v[0].title, "default/fill-form");
  assert.equal(v[0].purpose, "fill the contact form");
  assert.deepEqual(v[0].windows.map((w) => [w.name, w.tabId, w.source, w.disposition, w.unacknowledged]), [
    ["fill-form-main", "101", "Open", "Temporary", false],
    ["fill-form-compose", "102", "Spawned", "unacknowledged", true],
  ]);
  assert.deepEqual(sessionsView(undefined), []);
});

test("session monitor view: the agent's unacknowledged mark wins; each unacknowledged window has its kubectl hint", () => {
  const [s] = sessionsView([
    {
      namespace: "team-a",
      name: "fill-form",
      thread: "t-1",
      purpose: "p",
      phase: "Active",
      windows: [
        { name: "main", tabId: "1", source: "Open", disposition: "", phase: "Open", unacknowledged: false },
        { name: "compose", tabId: "2", source: "Spawned", disposition: "", phase: "Open", unacknowledged: true },
      ],
    },
  ]);
  assert.deepEqual(s.windows.map((w) => [w.name, w.phase, w.disposition, w.unacknowledged]), [
    ["main", "Open", "—", false],
    ["compose", "Open", "unacknowledged", true],
  ]);
  assert.equal(s.unacknowledged, 1);
  assert.deepEqual(s.hints, [`kubectl patch browserwindow compose -n team-a --type=merge -p '{"spec":{"disposition":"Close"}}'`]);
});
