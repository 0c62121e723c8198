import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { requestData } from '../../shared/db/schema.js';

/**
 * Request and response bodies for keys with "store request data" on. They are
 * written with the usage record, in the same transaction (see
 * `WalletService.chargeMany`); for other keys no prompt or completion text is
 * kept anywhere, logs included.
 *
 * @example
 * bodiesToStore('{"model":…}', '{"id":…}', 1 << 20); // { requestBody, responseBody }
 */
export function bodiesToStore(
  requestBody: string,
  responseBody: string,
  maxBytes: number,
): { requestBody: string; responseBody: string } {
  return { requestBody: cut(requestBody, maxBytes), responseBody: cut(responseBody, maxBytes) };
}

function cut(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  // Cut on a character boundary, and say so.
  return `${Buffer.from(text)
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}…[cut at ${maxBytes} bytes]`;
}

/** Deletes stored bodies older than `days` (TOLLGATE_REQUEST_DATA_RETENTION_DAYS). Returns how many. */
export async function purgeRequestData(db: Database, days: number): Promise<number> {
  const deleted = await db
    .delete(requestData)
    .where(sql`${requestData.createdAt} < now() - ${`${days} days`}::interval`)
    .returning({ id: requestData.requestId });
  return deleted.length;
}
