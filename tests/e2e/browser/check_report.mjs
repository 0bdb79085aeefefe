// Open an evalgate HTML report in headless Chromium (@sparticuz/chromium + puppeteer-core) and
// report what a reader would see: every request the page made, the verdict, the units in the
// order shown, how many rows show before and after typing into each search box and after ticking
// each failures-only toggle, and a screenshot. First, in a 1280 × 900 window as the page opens,
// where the first screen's parts end (their bottom edges; null for a part the page lacks) and
// how tall the page is with its folds shut (SCREENSHOT-first.png); then it opens every fold and
// looks at the rest as a reader who opened them.
// Usage: node check_report.mjs REPORT.html SCREENSHOT.png SEARCH_TEXT
import { launch } from './launch.mjs';

const [, , file, screenshot, query] = process.argv;
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  const requests = [];
  page.on('request', (request) => {
    requests.push(request.url());
    // Nothing but the page itself may load; anything else is recorded and refused.
    if (request.url() === 'file://' + file) request.continue();
    else request.abort();
  });
  const errors = [];
  page.on('pageerror', (err) => errors.push(String(err)));
  await page.setViewport({ width: 1280, height: 900 });
  await page.goto('file://' + file, { waitUntil: 'load' });
  const firstScreen = await page.evaluate(() => {
    const bottom = (selector) => {
      const el = document.querySelector(selector);
      return el && el.checkVisibility() ? el.getBoundingClientRect().bottom : null;
    };
    return {
      verdict: bottom('#banner'),
      regressed: bottom('#regressed'),
      firstCase: bottom('#first-case'),
      pageHeight: document.documentElement.scrollHeight,
    };
  });
  await page.screenshot({ path: screenshot.replace(/\.png$/, '-first.png') });
  await page.$$eval('details', (folds) => folds.forEach((d) => { d.open = true; }));
  const visible = (id) =>
    page.$$eval(`#${id} tbody tr`, (rows) => rows.filter((r) => !r.hidden).length).catch(() => null);
  const tables = await page.$$eval('table.searchable', (ts) => ts.map((t) => t.id));
  const before = {};
  const after = {};
  for (const id of tables) before[id] = await visible(id);
  for (const id of tables) {
    await page.type(`input[data-table="${id}"]`, query);
    after[id] = await visible(id);
  }
  const toggled = {};
  for (const box of await page.$$('input.only-failures')) {
    const id = await box.evaluate((el) => el.dataset.table);
    await page.$$eval('input.filter', (boxes) => boxes.forEach((b) => { b.value = ''; b.dispatchEvent(new Event('input')); }));
    await box.click();
    toggled[id] = await visible(id);
    await box.click();
  }
  await page.screenshot({ path: screenshot, fullPage: true });
  const units = await page
    .$$eval('#units tbody tr', (rows) => rows.map((r) => [r.cells[0].textContent, r.cells[12].textContent]))
    .catch(() => []);
  const csp = await page.$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.content);
  const verdict = await page.$eval('#verdict', (el) => el.textContent).catch(() => null);
  const slices = await page.$$eval('#slices tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));
  const text = await page.evaluate(() => document.body.innerText);
  const scripts = await page.$$eval('script', (s) => s.length);
  console.log(JSON.stringify({ requests, errors, firstScreen, verdict, slices, before, after, toggled, units, csp, tables, text, scripts }));
} finally {
  await browser.close();
}
