// Open an evalgate HTML report in headless Chromium at each given window width and report what
// sticks out of the page's column: every element whose right edge is past the body's content box,
// unless an ancestor scrolls it inside its own box (overflow-x auto/scroll/hidden). A table wider
// than the column must wrap or scroll inside itself; the page as a whole never scrolls sideways.
// Usage: node measure_fit.mjs REPORT.html SCREENSHOT_PREFIX WIDTH [WIDTH ...]
import { launch } from './launch.mjs';

const [, , file, prefix, ...widths] = process.argv;
const browser = await launch();
try {
  const page = await browser.newPage();
  const fits = {};
  for (const width of widths.map(Number)) {
    await page.setViewport({ width, height: 900 });
    await page.goto('file://' + file, { waitUntil: 'load' });
    // What a fold holds must fit too, once opened.
    await page.$$eval('details', (folds) => folds.forEach((d) => { d.open = true; }));
    fits[width] = await page.evaluate(() => {
      const body = document.body;
      const style = getComputedStyle(body);
      const column = body.getBoundingClientRect().right - parseFloat(style.paddingRight);
      const scrolled = (el) => {
        for (let up = el.parentElement; up && up !== body; up = up.parentElement) {
          if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(up).overflowX)) return true;
        }
        return false;
      };
      const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
        (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
      const past = (el) => el.getBoundingClientRect().right > column + 0.5;
      const out = [];
      for (const el of body.querySelectorAll('*')) {
        // The outermost element that sticks out names the culprit; its children follow it out.
        if (el.tagName === 'SCRIPT' || scrolled(el) || !past(el) || past(el.parentElement)) continue;
        out.push({ element: name(el), right: el.getBoundingClientRect().right, text: el.textContent.slice(0, 60) });
      }
      const runs = document.querySelector('#runs');
      const box = runs && runs.parentElement.classList.contains('scroll') ? runs.parentElement : runs;
      return {
        column,
        pageWidth: document.documentElement.scrollWidth,
        window: window.innerWidth,
        runsRight: runs ? runs.getBoundingClientRect().right : null,
        runsBoxRight: box ? box.getBoundingClientRect().right : null,
        out,
      };
    });
    await page.screenshot({ path: `${prefix}-${width}.png`, fullPage: true });
  }
  console.log(JSON.stringify(fits));
} finally {
  await browser.close();
}
