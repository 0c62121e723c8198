import type { Database } from '../../shared/db/client.js';
import { GatewayError } from '../../shared/http/errors.js';
import { type Checkpoint, chainDigest, EMPTY_DIGEST, readCheckpoint, saveCheckpoint } from './ledger-checkpoints.js';
import { booksNow, type EntryPage, entryPages, usagePages } from './reconcile-pages.js';

/**
 * The most differences one verification lists (all are counted): a broken ledger is read from its
 * first ones.
 */
export const MAX_DIFFERENCES_LISTED = 100;

/** What kind of disagreement a difference is. */
export type DifferenceKind =
  /** The wallet's balance is not the ledger's sum. */
  | 'balance_differs'
  /** An entry's `balance_after` is not the entry before it plus its amount. */
  | 'entry_balance_differs'
  /** A charge's amount is not its usage record's cost. */
  | 'charge_differs'
  /** A usage record with a cost has no charge in the ledger. */
  | 'usage_without_charge'
  /** A charge names no usage record of the organization. */
  | 'charge_without_usage'
  /** The entries up to the last checkpoint are no longer the ones it verified: history was edited. */
  | 'checkpoint_differs';

/** One place where the books disagree, named by the ledger entry and the request it concerns. */
export interface Difference {
  kind: DifferenceKind;
  ledgerEntryId: number | null;
  requestId: string | null;
  /** What the other side says it should be, in nano-units. */
  expected: bigint;
  /** What this row holds, in nano-units. */
  found: bigint;
}

export interface Verification {
  orgId: string;
  /** 'full': every entry and usage record read; 'incremental': those after the last checkpoint. */
  mode: 'full' | 'incremental';
  /** The wallet's balance column. */
  walletBalance: bigint;
  /** The ledger's amounts summed (incremental: the checkpoint's balance plus the new amounts). */
  ledgerSum: bigint;
  /**
   * The ledger's entries up to the last one verified (incremental: the checkpoint's count plus
   * those read).
   */
  ledgerEntries: number;
  /** The usage records checked (incremental: those dated since the checkpoint). */
  usageRecords: number;
  /** The checkpoint started from (incremental) or checked against (full); null when there was none. */
  checkpoint: { lastEntryId: number; madeAt: Date } | null;
  /** The ledger entries this verification read. */
  entriesRead: number;
  differences: Difference[];
  /** All differences found (only the first `MAX_DIFFERENCES_LISTED` are listed). */
  differenceCount: number;
}

/** How far a verification has read: a phase, its rows so far, and the share of it done (0 to 1). */
export interface VerifyProgress {
  phase: 'ledger' | 'usage';
  read: number;
  fraction: number;
}

/** Differences of one kind of check: the first ones kept, all counted. */
class Found {
  readonly listed: Difference[] = [];
  count = 0;
  add(kind: DifferenceKind, ledgerEntryId: number | null, requestId: string | null, expected: bigint, found: bigint) {
    this.count++;
    if (this.listed.length < MAX_DIFFERENCES_LISTED)
      this.listed.push({ kind, ledgerEntryId, requestId, expected, found });
  }
}

/**
 * The ledger read in id order: each entry's balance from the one before, each charge against its
 * usage record, the digest chained on; in a full read, the checkpoint compared with what the
 * entries it covered now say.
 */
class LedgerPass {
  readonly chain = new Found();
  readonly charges = new Found();
  readonly history = new Found();
  /** The last entry's `balance_after`, which the next entry's follows. */
  balance: bigint;
  /** The amounts summed (from the checkpoint's balance, incremental). */
  sum: bigint;
  digest: string;
  read = 0;
  private compared: boolean;

  constructor(
    start: Checkpoint | null,
    private readonly checked: Checkpoint | null,
  ) {
    this.balance = start?.balance ?? 0n;
    this.sum = this.balance;
    this.digest = start?.digest ?? EMPTY_DIGEST;
    this.compared = checked === null;
  }

  take(page: EntryPage): void {
    for (const [id, kind, requestId, usageId, expected, balanceAfter, amount, cost] of page.bad) {
      const entryId = Number(id);
      if (BigInt(balanceAfter) !== BigInt(expected))
        this.chain.add('entry_balance_differs', entryId, requestId, BigInt(expected), BigInt(balanceAfter));
      if (kind !== 'charge') continue;
      if (usageId === null) this.charges.add('charge_without_usage', entryId, requestId, 0n, -BigInt(amount));
      else if (BigInt(cost!) !== -BigInt(amount))
        this.charges.add('charge_differs', entryId, usageId, BigInt(cost!), -BigInt(amount));
    }
    this.balance = page.lastBalance;
    this.sum += page.sum;
    this.digest = chainDigest(this.digest, page.hashes);
    this.read += page.n;
  }

  /**
   * A full read past the checkpoint's last entry (or to its end): the same count, balance and
   * digest, or history changed.
   */
  compare(): void {
    if (this.compared) return;
    this.compared = true;
    const c = this.checked!;
    if (this.read !== c.entries || this.sum !== c.balance || this.digest !== c.digest)
      this.history.add('checkpoint_differs', c.lastEntryId, null, c.balance, this.sum);
  }
}

/**
 * Verifies an organization's books, reading them a page at a time and saying how far it has got. By
 * default from the last checkpoint (`ledger-checkpoints.ts`): the entries after it (each entry's
 * running balance, each charge against its usage record, the wallet's balance against the last) and
 * the usage records dated since (each with a cost has its charge), so its time follows the new
 * entries, not the history. `full` (and the first verification) reads everything, and finds an
 * entry edited behind the checkpoint by its digest. Books that agree move the checkpoint to the
 * last entry read. Usage record, charge and balance are written in one transaction
 * (`WalletService.chargeMany`), so any difference is a row changed after the fact, and it is named.
 *
 * @example
 * const verification = await verifyWallet(db, 'org_1'); // .differences: [] when the books agree
 */
export async function* verifyBooks(
  db: Database,
  orgId: string,
  { full = false }: { full?: boolean } = {},
): AsyncGenerator<VerifyProgress, Verification> {
  const checkpoint = await readCheckpoint(db, orgId);
  const now = await booksNow(db, orgId);
  if (!now) throw new GatewayError('not_found', `Organization ${orgId} has no wallet.`, { status: 404 });
  const start = full ? null : checkpoint;
  const pass = new LedgerPass(start, full ? checkpoint : null);
  const after = start?.lastEntryId ?? 0;
  // A full read stops at the checkpoint's last entry to compare, then goes on.
  const stops = full && checkpoint ? [Math.min(checkpoint.lastEntryId, now.lastId), now.lastId] : [now.lastId];
  let from = after;
  for (const upTo of stops) {
    for await (const page of entryPages(db, orgId, from, upTo, () => pass.balance)) {
      pass.take(page);
      yield { phase: 'ledger', read: pass.read, fraction: (page.lastId - after) / Math.max(1, now.lastId - after) };
    }
    pass.compare();
    from = upTo;
  }
  // Entries removed from the end of what the checkpoint covered: none reads past it, the balance
  // says nothing.
  if (start && now.lastId < start.lastEntryId)
    pass.history.add('checkpoint_differs', start.lastEntryId, null, start.balance, pass.sum);
  const usage = new Found();
  let usageRead = 0;
  const since = start?.usageFrom ?? null;
  let first: number | null = since?.getTime() ?? null;
  for await (const page of usagePages(db, orgId, since)) {
    for (const [id, cost] of page.uncharged) usage.add('usage_without_charge', null, id, BigInt(cost), 0n);
    usageRead += page.n;
    first ??= Date.parse(page.lastKey);
    const span = Math.max(1, now.now.getTime() - first);
    yield { phase: 'usage', read: usageRead, fraction: Math.min(1, (Date.parse(page.lastKey) - first) / span) };
  }
  const balance = new Found();
  if (now.balance !== pass.sum) balance.add('balance_differs', null, null, pass.sum, now.balance);
  const found = [balance, pass.history, pass.chain, usage, pass.charges];
  const differenceCount = found.reduce((n, f) => n + f.count, 0);
  const entries = (start?.entries ?? 0) + pass.read;
  if (differenceCount === 0 && now.lastId > 0)
    await saveCheckpoint(db, {
      orgId,
      lastEntryId: now.lastId,
      entries,
      balance: pass.sum,
      digest: pass.digest,
      usageFrom: now.now,
    });
  return {
    orgId,
    mode: start ? 'incremental' : 'full',
    walletBalance: now.balance,
    ledgerSum: pass.sum,
    ledgerEntries: entries,
    usageRecords: usageRead,
    checkpoint: checkpoint && { lastEntryId: checkpoint.lastEntryId, madeAt: checkpoint.madeAt },
    entriesRead: pass.read,
    differences: found.flatMap((f) => f.listed).slice(0, MAX_DIFFERENCES_LISTED),
    differenceCount,
  };
}

/** `verifyBooks` read to its end, its progress unseen. */
export async function verifyWallet(db: Database, orgId: string, options: { full?: boolean } = {}) {
  const steps = verifyBooks(db, orgId, options);
  for (;;) {
    const step = await steps.next();
    if (step.done) return step.value;
  }
}
