// The extension reads a press step's key as internal/browser/keys does (the agent's
// focus guard, the CDP and fake drivers): both test against the same table.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseKey } from "../step.js";

const table = JSON.parse(readFileSync(new URL("../../internal/browser/keys/testdata/keys.json", import.meta.url), "utf8"));

test("the shared key table has cases", () => {
  assert.ok(table.cases.length >= 20 && table.errors.length >= 3);
});

test("parseKey presses what internal/browser/keys presses", () => {
  for (const c of table.cases) {
    const got = parseKey(c.spec, c.mac);
    assert.deepEqual(
      { key: got.key, code: got.code ?? "", keyCode: got.keyCode ?? 0, text: got.text ?? "", modifiers: got.modifiers },
      c.want,
      `parseKey(${JSON.stringify(c.spec)}, mac=${c.mac})`,
    );
  }
});

test("parseKey refuses what internal/browser/keys refuses, teaching the corrected call", () => {
  for (const e of table.errors) {
    assert.throws(() => parseKey(e.spec, false), (err) => err.message.includes(e.says) && err.message.includes("Shift+Tab"), `parseKey(${JSON.stringify(e.spec)})`);
  }
});
