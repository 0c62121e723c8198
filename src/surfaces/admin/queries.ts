import { eq } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { organizations, wallets } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Organization } from '../../platform/orgs/service.js';
import { isUniqueViolation } from '../../shared/db/errors.js';

/**
 * Every organization with its balance in one query, so listing a hundred
 * organizations is not a hundred and one round trips.
 *
 * @example
 * const rows = await orgsWithBalances(services.db); // [{ org, balance: 0n }, ...]
 */
export async function orgsWithBalances(db: Database): Promise<{ org: Organization; balance: bigint }[]> {
  const rows = await db
    .select({ org: organizations, balance: wallets.balance })
    .from(organizations)
    .leftJoin(wallets, eq(wallets.orgId, organizations.id))
    .orderBy(organizations.createdAt, organizations.id);
  return rows.map((row) => ({ org: row.org, balance: row.balance ?? 0n }));
}

/**
 * Turns a unique-index violation (two requests racing for the same model id,
 * display name or repo id) into 409 `conflict` instead of a 500.
 *
 * @example
 * const row = await asConflict(catalog.update(id, changes), 'Another model already uses this display name.');
 */
export async function asConflict<T>(work: Promise<T>, message: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (isUniqueViolation(error)) throw new GatewayError('conflict', message, { cause: error });
    throw error;
  }
}
