import { vi } from 'vitest';

/** What `until` answers: the check's value, once truthy. */
export type Truthy<T> = Exclude<T, false | '' | 0 | null | undefined>;

/**
 * How tests wait: for an event, by polling what can be observed of it, with a
 * deadline; never by sleeping for a while and hoping it has happened.
 *
 * - A condition: `until(what, check)`. `check` answers falsy for "not yet"
 *   and anything truthy once it holds (that value is returned); a throw fails
 *   the wait at once, so an assertion inside `check` holds for every attempt.
 * - An assertion that must come true: `vi.waitFor(() => expect(…))`, which
 *   retries it and throws its last failure.
 *
 * `sleep` is for time that is itself the subject (a client that holds a
 * stream open, a trickle of requests, a fault that lasts a while), each
 * use with a comment saying so. A check that something does *not* happen
 * waits for a marker that the system has gone past the point where it would
 * have (the charge applier settled, a further heartbeat sent, a reconcile
 * pass run), not for a while.
 *
 * @example
 * await until('two ready replicas', () => ready() === 2, { timeout: 60_000 });
 * const record = await until('the usage record is written', async () => (await recordsOf(orgId))[0]);
 */
export async function until<T>(
  what: string,
  check: () => T | Promise<T>,
  options: { timeout?: number; interval?: number; detail?: () => unknown } = {},
): Promise<Truthy<T>> {
  const { timeout = 10_000, interval = 50 } = options;
  let threw = false;
  const attempt = async () => {
    try {
      return await check();
    } catch (error) {
      threw = true;
      throw error;
    }
  };
  try {
    return await vi.waitUntil(attempt, { timeout, interval });
  } catch (error) {
    if (threw) throw error;
    const detail = options.detail
      ? `\n${await Promise.resolve()
          .then(options.detail)
          .then(shown, (failure: unknown) => `(its detail failed: ${String(failure)})`)}`
      : '';
    throw new Error(`timed out after ${timeout} ms waiting until ${what}${detail}`, { cause: error });
  }
}

/**
 * Lets `ms` pass. Only for time the test is about (see above): never to wait for something it then
 * checks.
 */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function shown(value: unknown): string {
  return typeof value === 'string'
    ? value
    : JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}
