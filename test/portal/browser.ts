import { existsSync } from 'node:fs';
import { requireServices } from '../helpers/services.js';

/** Debian's Chromium, where the `chromium` package puts it (or CHROMIUM_PATH). */
export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser tests can run: a Chromium to drive. Without one they
 * skip with a message, or fail under REQUIRE_SERVICES=1 (CI installs it).
 */
export function chromiumAvailable(): boolean {
  if (existsSync(chromiumPath)) return true;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but there is no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
  console.warn(`skipping the portal's browser tests: no Chromium at ${chromiumPath} (apt-get install chromium, or set CHROMIUM_PATH)`);
  return false;
}
