import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { requireServices } from '../../helpers/services.js';
import { repoRoot } from '../../helpers/processes.js';

/** Debian's Chromium, where the `chromium` package puts it (or CHROMIUM_PATH). */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests can run: a Chromium to drive. Without one they
 * skip with a message, or fail under REQUIRE_SERVICES=1 (CI installs it).
 */
export function chromiumAvailable(): boolean {
  if (existsSync(chromiumPath)) return true;
  if (requireServices)
    throw new Error(
      `REQUIRE_SERVICES=1 but there is no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`,
    );
  console.warn(
    `skipping the portal's browser tests: no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`,
  );
  return false;
}

/**
 * Where the browser tests write a screenshot of every page, at 1280 and 360 px wide
 * (CONTRIBUTING.md names it).
 */
export const SHOTS = path.join(repoRoot, 'test-results/portal');
const WIDTHS = [1280, 360] as const;

/**
 * Screenshots of the page at each width (`test-results/portal/<name>-<width>.png`), that the page
 * does not scroll sideways at either, and an axe-core check: no serious or critical violation. The
 * page's context must bypass CSP so axe-core can be added.
 *
 * @example
 * await lookAt(page, 'stacks', axeSource);
 */
export async function lookAt(page: Page, name: string, axeSource: string): Promise<void> {
  for (const width of WIDTHS) {
    await page.setViewportSize({ width, height: 900 });
    // Two frames, so the page is laid out again at this width before the picture.
    await page.evaluate(
      () =>
        new Promise((resolve) => {
          const frame = (callback: () => void) =>
            (globalThis as unknown as { requestAnimationFrame(callback: () => void): void }).requestAnimationFrame(
              callback,
            );
          frame(() => frame(() => resolve(null)));
        }),
    );
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
    // The page itself never scrolls sideways: a wide table scrolls inside its own box
    // (.table-wrap).
    const overflow = await page.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
      ).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow, `${name} at ${width} px scrolls sideways by ${overflow} px`).toBeLessThanOrEqual(0);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  // Standards mode: the page starts with <!DOCTYPE html> (quirks mode lays out tables, heights and
  // fonts otherwise).
  expect(
    await page.evaluate(() => (globalThis as unknown as { document: { compatMode: string } }).document.compatMode),
    name,
  ).toBe('CSS1Compat');
  expect((await page.content()).length, name).toBeLessThan(100_000);
  await page.addScriptTag({ content: axeSource });
  const violations = await page.evaluate(async () => {
    const result = await (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: unknown[] }> }> };
      }
    ).axe.run();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}, ${v.nodes.length})`);
  });
  expect(violations, name).toEqual([]);
}

/**
 * What the page logs as an error from now on, with the URL it names (a
 * missing favicon is "Failed to load resource: … 404" on every first page).
 *
 * @example
 * const errors = consoleErrors(page);
 * // … browse …
 * expect(errors.filter((line) => line.includes('status of 404'))).toEqual([]);
 */
export function consoleErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`${message.text()} ${message.location().url}`);
  });
  return errors;
}

/**
 * A new browser context signed in to the portal as `who`, on the overview.
 * The context bypasses CSP only so `lookAt` can add axe-core; the pages' own
 * CSP is checked in security.test.ts.
 *
 * @example
 * const page = await signedInPage(browser, gateway.url, { email, password });
 */
export async function signedInPage(
  browser: Browser,
  url: string,
  who: { email: string; password: string },
): Promise<Page> {
  const page = await (await browser.newContext({ bypassCSP: true })).newPage();
  await page.goto(`${url}/portal/sign-in`);
  await page.getByLabel('Email').fill(who.email);
  await page.getByLabel('Password').fill(who.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL('**/portal/overview');
  return page;
}

/** The text of the first element `selector` finds, its white space collapsed. */
export async function textOf(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
}
