// The `act` command's upload step: page.js's upload op gets the target and the files (names,
// types, times and base64 data) and nothing else: no input event, no focus, no file chooser,
// no file path. The worker checks the step first: a target, 1-10 files, each a base name with
// base64 data, 10 MiB in all.

import test from "node:test";
import assert from "node:assert/strict";
import { setup, ok, refused } from "./harness.mjs";
import { MAX_UPLOAD_BYTES } from "../step.js";

/** A page whose page.js takes every upload but one into a button ("Menu"). */
function uploadPage(browser) {
  const sent = [];
  const evals = [];
  let nonce = null;
  browser.setPage(async (tabId, method, params) => {
    sent.push(method);
    switch (method) {
      case "Page.enable":
        return {};
      case "Page.getFrameTree":
        return { frameTree: { frame: { id: `frame-${tabId}` } } };
      case "Page.createIsolatedWorld":
        return { executionContextId: 9 };
      case "Runtime.evaluate": {
        assert.equal(params.contextId, 9, "evaluated in the tabwarden world");
        const m = /\)\(("[a-zA-Z]+"), (\{.*\})\)$/s.exec(params.expression);
        const op = JSON.parse(m[1]);
        const args = JSON.parse(m[2]);
        evals.push({ op, args });
        if (op === "init") nonce = args.world;
        if (op === "upload" && args.target?.text === "Menu") {
          return { result: { value: { error: { reason: "target_not_found", message: "<button> is not a file input" } } } };
        }
        if (op === "upload") return { result: { value: { x: 70, y: 45, files: args.files.map((f) => f.name) } } };
        return { result: { value: { document: "doc-1", epoch: 0, world: nonce } } };
      }
    }
    throw new Error(`the worker sent ${method}, which an upload never needs`);
  });
  return { sent, evals };
}

const resume = { name: "resume.txt", type: "text/plain", lastModified: 1764979200000, data: Buffer.from("Ada Lovelace").toString("base64") };

test("upload hands the target and the files to page.js, and nothing else reaches the page", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { sent, evals } = uploadPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const active = browser.tabsIn(user.windowId).find((t) => t.active).id;

  ok(await act({ kind: "upload", target: { text: "Resume" }, files: [resume] }));
  const last = evals.at(-1);
  assert.equal(last.op, "upload");
  assert.deepEqual({ target: last.args.target, files: last.args.files }, { target: { text: "Resume" }, files: [resume] });
  assert.match(refused(await act({ kind: "upload", target: { text: "Menu" }, files: [resume] }), "target_not_found").message, /not a file input/);
  assert.deepEqual(sent.filter((m) => m.startsWith("Input.") || m.startsWith("DOM.") || m.startsWith("Page.setIntercept")), [],
    "no input event, no DOM.setFileInputFiles (no path), no file chooser");
  assert.equal(browser.tabsIn(user.windowId).find((t) => t.active).id, active, "the user's active tab stays active");
  assert.equal(browser.tab(a.tabId).active, false);
});

test("upload is checked before it reaches the page", async () => {
  const env = await setup();
  const { browser, user } = env;
  const { evals } = uploadPage(browser);
  const a = ok(await env.cmd("open", { owner: "uid-a", url: "https://a.example/", windowId: user.windowId }));
  const act = (step) => env.cmd("act", { key: "k", owner: "uid-a", tabId: a.tabId, step });
  const before = evals.length;
  const big = "A".repeat(Math.ceil((MAX_UPLOAD_BYTES + 3) / 3) * 4);
  for (const [step, says] of [
    [{ kind: "upload", files: [resume] }, /upload needs a target/],
    [{ kind: "upload", target: { text: "Resume" } }, /upload needs files/],
    [{ kind: "upload", target: { text: "Resume" }, files: [] }, /upload needs files/],
    [{ kind: "upload", target: { text: "Resume" }, files: Array(11).fill(resume) }, /at most 10 files/],
    [{ kind: "upload", target: { text: "Resume" }, files: [{ ...resume, name: "../etc/passwd" }] }, /base name/],
    [{ kind: "upload", target: { text: "Resume" }, files: [{ ...resume, name: "" }] }, /base name/],
    [{ kind: "upload", target: { text: "Resume" }, files: [{ ...resume, data: "not base64!" }] }, /must be base64/],
    [{ kind: "upload", target: { text: "Resume" }, files: [{ ...resume, data: 7 }] }, /must be base64/],
    [{ kind: "upload", target: { text: "Resume" }, files: [{ ...resume, data: big }] }, /at most 10485760 bytes together/],
    [{ kind: "upload", target: { text: "Resume" }, files: ["resume.txt"] }, /must be an object/],
  ]) {
    assert.match(refused(await act(step), "invalid_args").message, says, JSON.stringify(step).slice(0, 200));
  }
  assert.equal(evals.length, before, "nothing reached the page");
});
