import { createHash } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerCheckpoints } from '../../shared/db/schema.js';

/** The point up to which an organization's books were last found to agree. */
export interface Checkpoint {
  orgId: string;
  /** The last ledger entry covered: the next verification reads the entries after it. */
  lastEntryId: number;
  /** How many entries it covered. */
  entries: number;
  /** The balance after its last entry. */
  balance: bigint;
  /** SHA-256, chained over the entries covered in id order (`chainDigest`), as hex. */
  digest: string;
  /** The usage records dated from here on are the next verification's to read. */
  usageFrom: Date;
  madeAt: Date;
}

/** The digest before any entry. */
export const EMPTY_DIGEST = '';

/**
 * The digest after more entries: for each, SHA-256 of the digest before it and the entry's own
 * SHA-256 (its fields as a JSON array, hashed in the database: `reconcile-pages.ts`). Any edit of
 * an entry covered, or one removed or added among them, changes every digest after it.
 *
 * @example
 * const digest = chainDigest(checkpoint.digest, page.hashes);
 */
export function chainDigest(previous: string, hashes: string): string {
  let digest = Buffer.from(previous, 'hex');
  for (let at = 0; at < hashes.length; at += 64)
    digest = createHash('sha256')
      .update(digest)
      .update(Buffer.from(hashes.slice(at, at + 64), 'hex'))
      .digest();
  return digest.toString('hex');
}

export async function readCheckpoint(db: Database, orgId: string): Promise<Checkpoint | null> {
  const [row] = await db.select().from(ledgerCheckpoints).where(eq(ledgerCheckpoints.orgId, orgId));
  return row ?? null;
}

/**
 * Keeps a verified point. Never moves one back: of two verifications that end together, the one
 * that covered more entries stays.
 */
export async function saveCheckpoint(db: Database, c: Omit<Checkpoint, 'madeAt'>): Promise<void> {
  await db
    .insert(ledgerCheckpoints)
    .values(c)
    .onConflictDoUpdate({
      target: ledgerCheckpoints.orgId,
      set: {
        lastEntryId: c.lastEntryId,
        entries: c.entries,
        balance: c.balance,
        digest: c.digest,
        usageFrom: c.usageFrom,
        madeAt: sql`now()`,
      },
      setWhere: sql`${ledgerCheckpoints.lastEntryId} <= ${c.lastEntryId}`,
    });
}
