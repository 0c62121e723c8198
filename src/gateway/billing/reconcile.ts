import type { Database } from '../../shared/db/client.js';
import { GatewayError } from '../../shared/http/errors.js';
import { type Checkpoint, chainDigest, EMPTY_DIGEST, readCheckpoint, saveCheckpoint } from './ledger-checkpoints.js';
import { booksNow, type EntryRow, entryPages, usagePages, type UsageRow } from './reconcile-pages.js';

/** The most differences one verification lists (all are counted): a broken ledger is read from its first ones. */
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
  /** The ledger's entries up to the last one verified (incremental: the checkpoint's count plus those read). */
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
 * The ledger read in id order: each entry's balance from the one before, each charge against its usage record,
 * the digest chained on; in a full read, the checkpoint compared with what the entries it covered now say.
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

  take(e: EntryRow): void {
    const id = Number(e.id);
    if (!this.compared && id > this.checked!.lastEntryId) this.compare();
    const amount = BigInt(e.amount);
    const after = BigInt(e.balance_after);
    if (after !== this.balance + amount)
      this.chain.add('entry_balance_differs', id, e.request_id, this.balance + amount, after);
    if (e.kind === 'charge') {
      if (e.usage_id === null) this.charges.add('charge_without_usage', id, e.request_id, 0n, -amount);
      else if (BigInt(e.cost!) !== -amount)
        this.charges.add('charge_differs', id, e.usage_id, BigInt(e.cost!), -amount);
    }
    this.balance = after;
    this.sum += amount;
    this.digest = chainDigest(this.digest, e);
    this.read++;
  }

  /** A full read past the checkpoint's last entry (or to its end): the same count, balance and digest, or history changed. */
  compare(): void {
    if (this.compared) return;
    this.compared = true;
    const c = this.checked!;
    if (this.read !== c.entries || this.sum !== c.balance || this.digest !== c.digest)
      this.history.add('checkpoint_differs', c.lastEntryId, null, c.balance, this.sum);
  }
}

/**
 * Verifies an organization's books, reading them a page at a time and saying how far it has got. By default
 * from the last checkpoint (`ledger-checkpoints.ts`): the entries after it (each entry's running balance, each
 * charge against its usage record, the wallet's balance against the last) and the usage records dated since
 * (each with a cost has its charge), so its time follows the new entries, not the history. `full` (and the first
 * verification) reads everything, and finds an entry edited behind the checkpoint by its digest. Books that
 * agree move the checkpoint to the last entry read. Usage record, charge and balance are written in one
 * transaction (`WalletService.chargeMany`), so any difference is a row changed after the fact, and it is named.
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
  for await (const page of entryPages(db, orgId, after, now.lastId)) {
    for (const row of page) pass.take(row);
    const span = Math.max(1, now.lastId - after);
    yield { phase: 'ledger', read: pass.read, fraction: (Number(page.at(-1)!.id) - after) / span };
  }
  pass.compare();
  // Entries removed from the end of what the checkpoint covered: none reads past it, the balance says nothing.
  if (start && now.lastId < start.lastEntryId)
    pass.history.add('checkpoint_differs', start.lastEntryId, null, start.balance, pass.sum);
  const usage = new Found();
  let usageRead = 0;
  const since = start?.usageFrom ?? null;
  let first: number | null = since?.getTime() ?? null;
  for await (const page of usagePages(db, orgId, since)) {
    for (const row of page) checkUsage(row, usage);
    usageRead += page.length;
    first ??= Date.parse(page[0]!.key);
    const span = Math.max(1, now.now.getTime() - first);
    yield { phase: 'usage', read: usageRead, fraction: Math.min(1, (Date.parse(page.at(-1)!.key) - first) / span) };
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

/** A usage record with a cost is charged once, by a charge of its organization (its amount is the charge's check). */
function checkUsage(row: UsageRow, usage: Found): void {
  const cost = BigInt(row.cost);
  if (cost !== 0n && !row.charged) usage.add('usage_without_charge', null, row.id, cost, 0n);
}

/** `verifyBooks` read to its end, its progress unseen. */
export async function verifyWallet(db: Database, orgId: string, options: { full?: boolean } = {}) {
  const steps = verifyBooks(db, orgId, options);
  for (;;) {
    const step = await steps.next();
    if (step.done) return step.value;
  }
}
