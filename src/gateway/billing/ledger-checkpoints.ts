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

/** The fields of a ledger entry the digest covers, as the page reads them (amounts and ids as text). */
export interface DigestedEntry {
  id: string;
  kind: string;
  amount: string;
  balance_after: string;
  request_id: string | null;
  note: string | null;
  /** Its time to the microsecond, UTC. */
  at: string;
}

/** The digest before any entry. */
export const EMPTY_DIGEST = '';

/**
 * The digest after one more entry: SHA-256 of the one before and the entry's fields as a JSON array (so no
 * field's text can run into the next). Any edit of an entry covered, or one removed or added among them,
 * changes every digest after it.
 */
export function chainDigest(previous: string, e: DigestedEntry): string {
  const fields = JSON.stringify([e.id, e.kind, e.amount, e.balance_after, e.request_id, e.note, e.at]);
  return createHash('sha256').update(previous).update(fields).digest('hex');
}

export async function readCheckpoint(db: Database, orgId: string): Promise<Checkpoint | null> {
  const [row] = await db.select().from(ledgerCheckpoints).where(eq(ledgerCheckpoints.orgId, orgId));
  return row ?? null;
}

/**
 * Keeps a verified point. Never moves one back: of two verifications that end together, the one that covered
 * more entries stays.
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
