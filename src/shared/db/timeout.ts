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
