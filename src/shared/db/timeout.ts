import { type ErrorCode, GatewayError } from '../http/errors.js';

/**
 * Longest the gateway waits on the store for one statement: a dead network can hang a query for
 * minutes.
 */
export const STORE_TIMEOUT_MS = 5_000;

/** The store did not answer in time; what was sent may or may not have been done. */
export class StoreTimeoutError extends Error {
  override name = 'StoreTimeoutError';
}

/**
 * Waits for `work` at most `ms`, then rejects with `StoreTimeoutError` (the
 * work itself goes on; callers make their writes idempotent for that).
 *
 * @example
 * const rows = await withinStoreTimeout(db.select().from(wallets));
 */
export async function withinStoreTimeout<T>(work: Promise<T>, ms = STORE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(`the store did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The 503 codes a store's outage is answered with: each store names its own, so a client knows
 * which failed.
 */
export type StoreOutageCode = Extract<ErrorCode, 'responses_unavailable' | 'files_unavailable' | 'batches_unavailable'>;

/**
 * `work` within the store's timeout; a database that fails or does not answer becomes a 503 `code`
 * with `Retry-After: 2`, which the client can retry (a `GatewayError` the work threw itself goes
 * through as it is). The statement may still run on: each store writes what one statement does,
 * done or not.
 *
 * @example
 * await withinStoreOr503(db.select().from(files), 'files_unavailable', 'The gateway cannot read files.');
 */
export async function withinStoreOr503<T>(
  work: PromiseLike<T>,
  code: StoreOutageCode,
  message: string,
  ms = STORE_TIMEOUT_MS,
): Promise<T> {
  try {
    return await withinStoreTimeout(Promise.resolve(work), ms);
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    throw new GatewayError(code, `${message} Retry with backoff.`, { headers: { 'Retry-After': '2' }, cause: error });
  }
}
