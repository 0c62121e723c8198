import { and, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { storedResponseInputItems, storedResponses } from '../../shared/db/schema.js';
import { responseIdOfItem } from './ids.js';

type Json = Record<string, unknown>;

/**
 * The stored items `ids` name (a request's `item_reference`s), of `orgId`'s live responses only:
 * one statement for every reference of a request. Each id names its response (`ownedItemId`), so
 * the statement reads those responses' rows by their primary key, their outputs and, of their input
 * items, only the ones named (by their unique index). An id found nowhere (unknown, expired,
 * deleted, another organization's, one the gateway did not make) is absent.
 */
export async function readReferencedItems(db: Database, orgId: string, ids: string[]): Promise<Map<string, Json>> {
  // Only ids the gateway made reach the database: any other names no stored item, and may hold what
  // it refuses.
  const wanted = new Set(ids.filter((id) => responseIdOfItem(id) !== null));
  const responseIds = [...new Set([...wanted].map((id) => responseIdOfItem(id)!))];
  const found = new Map<string, Json>();
  if (responseIds.length === 0) return found;
  const items = storedResponseInputItems;
  const rows = await db
    .select({
      // The response's text only for a row stored before output_json (see the schema), never for a
      // later one.
      output: sql<string>`coalesce(${storedResponses.output}, ${storedResponses.response})`,
      input: sql<string | null>`(select string_agg(${items.item}, ',') from ${items}
        where ${items.responseId} = ${storedResponses.id} and ${inArray(items.itemId, [...wanted])})`,
    })
    .from(storedResponses)
    .where(
      and(
        inArray(storedResponses.id, responseIds),
        eq(storedResponses.orgId, orgId),
        gt(storedResponses.expiresAt, sql`now()`),
      ),
    );
  for (const row of rows) {
    const stored = JSON.parse(row.output) as unknown;
    const output = Array.isArray(stored) ? stored : ((stored as Json | null)?.output ?? []);
    const input = JSON.parse(`[${row.input ?? ''}]`) as Json[];
    for (const item of [...input, ...(output as Json[])])
      if (typeof item?.id === 'string' && wanted.has(item.id)) found.set(item.id, item);
  }
  return found;
}
