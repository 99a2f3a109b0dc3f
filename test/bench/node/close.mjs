// The Playwright peer of tabwarden's cleanup benchmark: launch the given
// Chromium headless with the given flags, then for each size n, reps times open
// n pages at url in one browser context and time context.close(). One browser
// serves every size. Prints {"closes":{"<n>":[ms,...],...}}.
//
//   node close.mjs <chromium> <url> <n>:<reps>[,<n>:<reps>...] <warmups> [chromium flags...]
import { chromium } from 'playwright-core';

const [bin, url, sizesArg, warmArg, ...flags] = process.argv.slice(2);
const warm = Number(warmArg);
const sizes = sizesArg.split(',').map((kv) => kv.split(':').map(Number));
if (!sizes.length || sizes.some(([n, reps]) => !(n > 0) || !(reps > 0)) || !(warm >= 0)) {
  process.stderr.write(`close.mjs: sizes ${JSON.stringify(sizesArg)} and warmups ${JSON.stringify(warmArg)}: want e.g. "1:200,10:30" and 1\n`);
  process.exit(2);
}
// Playwright adds --headless and its own remote-debugging pipe. Chromium
// honours only the last --disable-features, so tabwarden's list (given after
// Playwright's own) is the one this browser runs with: it builds the same
// pages per window as tabwarden's (no omnibox UI, docs/design.md "Chromium's
// own cost"). Playwright's list turns off background fetches, paint holding
// and storage partitioning, none of which a context's close waits for.
const args = flags.filter((f) => f !== '--headless' && !f.startsWith('--remote-debugging-port') && !f.startsWith('--remote-allow-origins'));
const browser = await chromium.launch({ executablePath: bin, headless: true, args });
const closes = {};
try {
  for (const [n, reps] of sizes) {
    closes[n] = [];
    for (let r = 0; r < reps + warm; r++) {
      const context = await browser.newContext();
      const pages = [];
      for (let i = 0; i < n; i++) pages.push(await context.newPage());
      await Promise.all(pages.map((p) => p.goto(url, { waitUntil: 'load' })));
      await new Promise((res) => setTimeout(res, 300));
      const t0 = performance.now();
      await context.close();
      const d = performance.now() - t0;
      if (r >= warm) closes[n].push(d);
    }
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({ closes }) + '\n');
