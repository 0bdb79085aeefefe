// Render an evalgate PR comment the way GitHub shows it (GFM through `marked`, alerts through
// `marked-alert`, GitHub's colours for alerts, tables and folds) in headless Chromium, and report
// what a reader sees without clicking: the visible text, every Δ bar's drawn width beside its Δ,
// whether the first flipped case's candidate output is on screen, every request the page tried.
// Given COLUMN (GitHub's comment column is about 860 px wide), the body is that wide and it also
// reports, with every fold opened, each table's scroll width beside the width it is drawn in (a
// wider one is cut: GitHub scrolls it, the columns past the edge unseen) and how many lines each
// interval cell ("CI" column) takes; and a second screenshot with the folds open (SCREENSHOT-open.png).
// Usage: node render_comment.mjs COMMENT.md PAGE.html SCREENSHOT.png [COLUMN]
import { readFileSync, writeFileSync } from 'node:fs';
import { launch } from './launch.mjs';
import { Marked } from 'marked';
import markedAlert from 'marked-alert';

const [, , mdFile, htmlFile, screenshot, column] = process.argv;
const body = new Marked({ gfm: true }).use(markedAlert()).parse(readFileSync(mdFile, 'utf8'));
const width = column ? `width: ${Number(column)}px;` : 'max-width: 900px;';
const css = `
body { font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; ${width}
       margin: 1rem auto; color: #1f2328; }
table { border-collapse: collapse; display: block; overflow: auto; margin: 0 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
pre { background: #f6f8fa; padding: 12px; border-radius: 6px; overflow: auto; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
details { margin: 0 0 16px; } summary { cursor: pointer; }
.markdown-alert { padding: 8px 16px; border-left: 4px solid #d1d9e0; margin-bottom: 16px; }
.markdown-alert-caution { border-color: #cf222e; } .markdown-alert-warning { border-color: #9a6700; }
.markdown-alert-tip { border-color: #1a7f37; } .markdown-alert-note { border-color: #0969da; }
.markdown-alert-important { border-color: #8250df; }
.markdown-alert-title { font-weight: 600; margin: 0 0 4px; }`;
writeFileSync(
  htmlFile,
  `<!DOCTYPE html><html><head><meta charset="utf-8">` +
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">` +
    `<style>${css}</style></head><body class="markdown-body">${body}</body></html>`,
);

const browser = await launch();
try {
  const page = await browser.newPage();
  await page.setViewport({ width: column ? Number(column) + 100 : 1000, height: 900 });
  await page.setRequestInterception(true);
  const requests = [];
  page.on('request', (request) => {
    requests.push(request.url());
    if (request.url() === 'file://' + htmlFile) request.continue();
    else request.abort();
  });
  await page.goto('file://' + htmlFile, { waitUntil: 'load' });
  const seen = await page.evaluate(() => {
    const shown = (el) => el.checkVisibility() && el.getBoundingClientRect().height > 0;
    const bars = [];
    for (const table of document.querySelectorAll('table')) {
      if (!shown(table)) continue;
      const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent.trim());
      const bar = heads.indexOf('|Δ|');
      const delta = heads.indexOf('Δ');
      if (bar < 0) continue;
      for (const row of table.querySelectorAll('tbody tr')) {
        const cell = row.cells[bar];
        const range = document.createRange();
        range.selectNodeContents(cell);
        bars.push({ unit: row.cells[0].textContent, delta: row.cells[delta].textContent, width: range.getBoundingClientRect().width });
      }
    }
    // The first candidate output: a code block after its label, or the cell beside it in a table.
    const label = [...document.querySelectorAll('p, td')].find((el) =>
      ['candidate output:', 'candidate output'].includes(el.textContent.trim()),
    );
    const output = label && label.nextElementSibling;
    const alert = document.querySelector('.markdown-alert');
    return {
      text: document.body.innerText,
      alert: alert ? alert.className : null,
      alertText: alert ? alert.innerText : null,
      bars,
      firstOutput: output && shown(output) ? output.innerText : null,
      firstOutputTop: output ? output.getBoundingClientRect().top : null,
      folds: [...document.querySelectorAll('details')].map((d) => d.querySelector('summary').textContent),
      // The rows of the "More evidence" looks table (the table whose first header is "Look").
      evidenceRows: (() => {
        const table = [...document.querySelectorAll('table')].find(
          (t) => t.querySelector('thead th') && t.querySelector('thead th').textContent.trim() === 'Look',
        );
        return table ? [...table.querySelectorAll('tbody tr')].map((r) => [...r.cells].map((c) => c.textContent.trim())) : null;
      })(),
    };
  });
  await page.screenshot({ path: screenshot, fullPage: true });
  let fit = null;
  if (column) {
    fit = await page.evaluate(() => {
      const drawn = new Set([...document.querySelectorAll('table')].filter((t) => t.checkVisibility()));
      document.querySelectorAll('details').forEach((d) => { d.open = true; });
      const tables = [...document.querySelectorAll('table')].map((t) => ({
        head: [...t.querySelectorAll('thead th')].map((th) => th.textContent.trim()),
        scrollWidth: t.scrollWidth,
        clientWidth: t.clientWidth,
        open: drawn.has(t),
      }));
      const intervals = [];
      for (const t of document.querySelectorAll('table')) {
        const ci = [...t.querySelectorAll('thead th')].findIndex((th) => th.textContent.trim() === 'CI');
        if (ci < 0) continue;
        for (const row of t.querySelectorAll('tbody tr')) {
          const cell = row.cells[ci];
          const range = document.createRange();
          range.selectNodeContents(cell);
          const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          intervals.push({
            unit: row.cells[0].textContent,
            text: cell.textContent,
            lines: tops.size,
            height: range.getBoundingClientRect().height,
            lineHeight: parseFloat(getComputedStyle(cell).lineHeight),
          });
        }
      }
      return { tables, intervals, bodyWidth: document.body.clientWidth };
    });
    await page.screenshot({ path: screenshot.replace(/\.png$/, '-open.png'), fullPage: true });
  }
  console.log(JSON.stringify({ requests, ...seen, fit }));
} finally {
  await browser.close();
}
