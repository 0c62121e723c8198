/**
 * The rows of a raw statement (`db.execute`), whichever driver `client.ts` opened: postgres.js
 * returns the rows as the result, PGlite wraps them in `{ rows }`.
 *
 * @example
 * const [row] = rowsOf<{ balance: string }>(await db.execute(sql`select balance from wallets`));
 */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []);
}
