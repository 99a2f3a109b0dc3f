// The page script's shape (extension/page.js): one expression whose value is the page function,
// which also lands on globalThis.tabwardenPage when the file is injected as a script (MV3 cannot
// eval, so the extension injects the file and calls the global). Its behaviour on real pages is
// tested on Chromium (internal/browser/cdp/act_test.go); here: the calls that need no page.

import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";

const source = readFileSync(new URL("../page.js", import.meta.url), "utf8");

test("the file is one expression whose value is the page function", () => {
  const ctx = vm.createContext({});
  const fn = vm.runInContext(`(${source}\n)`, ctx);
  assert.equal(typeof fn, "function");
  assert.equal(fn.name, "tabwardenPage");
  assert.equal(vm.runInContext("globalThis.tabwardenPage", ctx), fn);
});

test("injected as a script, it defines globalThis.tabwardenPage", () => {
  const ctx = vm.createContext({});
  vm.runInContext(source, ctx);
  assert.equal(typeof vm.runInContext("globalThis.tabwardenPage", ctx), "function");
});

test("a call before init, or with another world's nonce, is refused as data", () => {
  const ctx = vm.createContext({});
  const fn = vm.runInContext(`(${source}\n)`, ctx);
  assert.equal(fn("observe", { world: "w1" }).error.reason, "world_mismatch");
  assert.equal(fn("observe").error.reason, "world_mismatch");
  assert.equal(fn("init", {}).error.reason, "bad_request");
});
