// The one way these scripts start the browser: @sparticuz/chromium's headless shell, driven by
// puppeteer-core (nothing downloaded at run time; the binary unpacks into the temp folder).
import chromium from '@sparticuz/chromium';
import puppeteer from 'puppeteer-core';

export async function launch() {
  return puppeteer.launch({
    args: chromium.args,
    executablePath: await chromium.executablePath(),
    headless: 'shell',
  });
}
