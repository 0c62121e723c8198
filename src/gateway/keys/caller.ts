import { eq } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { apiKeys, organizations } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { sameHash } from './secrets.js';
import type { Budgets } from '../admission/budgets.js';
import type { Band } from '../flow/bands.js';

// The request path's side of a key: found by its secret's hash (with what the
// request path needs of its organization) and checked into the caller.

export interface KeyLimits {
  requestsPerMinute: number;
  maxConcurrency: number;
  /** null = unlimited */
  tokensPerMinute: number | null;
  /** null = unlimited */
  monthlyTokens: number | null;
}

export interface KeySettings extends KeyLimits {
  storeRequestData: boolean;
  responseCache: boolean;
  /**
   * The highest priority band its requests may use, and theirs when they name none
   * (`flow/bands.ts`).
   */
  band: Band;
}

/** What the request path knows about the caller after authentication. */
export interface AuthenticatedKey extends KeySettings {
  id: string;
  orgId: string;
  /** The person the key acts as; null for a key made before its organization had a user. */
  userId: string | null;
  projectId: string | null;
  /** The key's budgets (`admission/budgets.ts`). */
  budgets: Budgets;
  /** Its organization's weight in the fleet's fair share (`flow/`). */
  orgShareWeight: number;
}

export type KeyRow = typeof apiKeys.$inferSelect;
export type KeyStatus = 'active' | 'expired' | 'revoked';

export function keyStatus(row: Pick<KeyRow, 'revokedAt' | 'expiresAt'>, now = new Date()): KeyStatus {
  if (row.revokedAt) return 'revoked';
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** A key as the request path finds it: with its organization's share weight (absent: 1). */
export type CallerKeyRow = KeyRow & { orgShareWeight?: number };

/** The key whose secret hashes to `hash`, with its organization's share weight, or undefined. */
export async function callerKeyByHash(db: Database, hash: string): Promise<CallerKeyRow | undefined> {
  const [found] = await db
    .select({ key: apiKeys, orgShareWeight: organizations.shareWeight })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.orgId))
    .where(eq(apiKeys.secretHash, hash));
  return found && Object.assign(found.key, { orgShareWeight: found.orgShareWeight });
}

/**
 * The caller, from the row found by `hash` (or undefined when none was):
 * 401 unless it is the same hash and the key is neither revoked nor expired.
 */
export function verifiedKey(row: CallerKeyRow | undefined, hash: string): AuthenticatedKey {
  if (!row || !sameHash(row.secretHash, hash)) throw unauthorized('Invalid API key.');
  const status = keyStatus(row);
  if (status === 'revoked') throw unauthorized('This API key has been revoked.');
  if (status === 'expired') throw unauthorized('This API key has expired.');
  return {
    id: row.id,
    orgId: row.orgId,
    userId: row.userId,
    projectId: row.projectId,
    requestsPerMinute: row.requestsPerMinute,
    maxConcurrency: row.maxConcurrency,
    tokensPerMinute: row.tokensPerMinute,
    monthlyTokens: row.monthlyTokens,
    storeRequestData: row.storeRequestData,
    responseCache: row.responseCache,
    budgets: { monthly: row.monthlyBudget, daily: row.dailyBudget },
    band: row.band,
    orgShareWeight: row.orgShareWeight ?? 1,
  };
}

export function unauthorized(message: string): GatewayError {
  return new GatewayError('unauthorized', message);
}
