import { it } from 'vitest';

/**
 * A skipped test named for what is missing, when something is: a file whose
 * every case needs a service that is not here (a `describe.each` over no
 * cases) still holds a test, so vitest does not fail it with "No test suite
 * found", and the run's report says what was skipped and why. (Under it,
 * `suite-keeping-runner.ts` adds an unnamed one to a file that forgets.)
 *
 * @example
 * skippedWithout(kinds.length === 0 ? 'no run sandbox here (bubblewrap, or a Docker engine)' : null);
 */
export function skippedWithout(missing: string | null): void {
  if (missing !== null) it.skip(`skipped: ${missing}`, () => undefined);
}
