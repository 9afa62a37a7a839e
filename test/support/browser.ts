import type { Browser } from 'playwright-core';

/**
 * Headless Chromium (`@sparticuz/chromium`, driven by `playwright-core`, both npm packages).
 * The first launch unpacks it into /tmp, so give the file a long timeout; close it in afterAll.
 */
export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const { default: Chromium } = await import('@sparticuz/chromium');
  return chromium.launch({
    executablePath: await Chromium.executablePath(),
    args: Chromium.args,
    headless: true,
  });
}
