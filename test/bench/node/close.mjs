// The Playwright peer of tabwarden's cleanup benchmark: launch the given
// Chromium headless with the given flags, then reps times open n pages at url in
// one browser context and time context.close(). Prints {"closes":[ms,...]}.
//
//   node close.mjs <chromium> <url> <n> <reps> <warmups> [chromium flags...]
import { chromium } from 'playwright-core';

const [bin, url, nArg, repsArg, warmArg, ...flags] = process.argv.slice(2);
const n = Number(nArg), reps = Number(repsArg), warm = Number(warmArg);
// Playwright adds --headless and its own remote-debugging pipe.
const args = flags.filter((f) => f !== '--headless' && !f.startsWith('--remote-debugging-port') && !f.startsWith('--remote-allow-origins'));
const browser = await chromium.launch({ executablePath: bin, headless: true, args });
const closes = [];
try {
  for (let r = 0; r < reps + warm; r++) {
    const context = await browser.newContext();
    const pages = [];
    for (let i = 0; i < n; i++) pages.push(await context.newPage());
    await Promise.all(pages.map((p) => p.goto(url, { waitUntil: 'load' })));
    await new Promise((res) => setTimeout(res, 300));
    const t0 = performance.now();
    await context.close();
    const d = performance.now() - t0;
    if (r >= warm) closes.push(d);
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify({ closes }) + '\n');
