import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, type LedgerKind, usageRecords } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';

/**
 * One ledger entry and what caused it: a top-up, refund or adjustment (with its note), or a charge
 * (with its request's usage).
 */
export interface ExportedEntry {
  id: number;
  /** Its time to the microsecond, `YYYY-MM-DDTHH:MM:SS.ffffffZ` (an export's order). */
  key: string;
  createdAt: Date;
  kind: LedgerKind;
  amount: bigint;
  balanceAfter: bigint;
  note: string | null;
  requestId: string | null;
}

/**
 * One usage record and the ledger entry that charged it (null when it cost nothing: a
 * response-cache hit, a free model).
 */
export interface ExportedUsage {
  requestId: string;
  /** Its time to the microsecond, `YYYY-MM-DDTHH:MM:SS.ffffffZ` (an export's order). */
  key: string;
  createdAt: Date;
  keyId: string;
  projectId: string | null;
  modelId: string;
  endpoint: string;
  promptTokens: number;
  completionTokens: number;
  /**
   * Of the prompt tokens, those read from the engine's prefix cache; of the completion, the
   * reasoning's.
   */
  cachedTokens: number;
  reasoningTokens: number;
  cost: bigint;
  status: number;
  usageSource: string;
  /** The batch the request was a line of; null for any other request. */
  batchId: string | null;
  ledgerEntryId: number | null;
}

export interface LedgerExport {
  orgId: string;
  from: Date;
  to: Date;
  /**
   * The balance right before the window's first entry (the last earlier entry's `balance_after`, or
   * 0).
   */
  openingBalance: bigint;
  /** The balance after the window's last entry. */
  closingBalance: bigint;
  entries: ExportedEntry[];
  usage: ExportedUsage[];
}

/**
 * One row of an export, in its order: a ledger entry with its charge's usage record, or a usage
 * record that cost nothing.
 */
export type ExportRow = { entry: ExportedEntry; usage: ExportedUsage | null } | { entry: null; usage: ExportedUsage };

/**
 * A window of an organization's ledger [`from`, `to`), read as it is written out: its balances at
 * once, its rows a page at a time. Every entry made in it comes with its cause and the usage record
 * it charged, and the usage records of the window that cost nothing (and so have no entry) come
 * too. A charge is in the window of its ledger entry (made when the charge reached PostgreSQL, a
 * few milliseconds after its request, and dated in the ledger's order: `wallet.ts`), so consecutive
 * windows hold every entry exactly once, and each opens at the balance the one before closed with.
 * No cap: a year is read 1,000 rows at a time, each page one statement on the ledger's (org_id,
 * created_at, id) index (or the usage records' (org_id, created_at)), so memory stays flat and the
 * first row goes out at once.
 */
export interface LedgerStream {
  orgId: string;
  from: Date;
  to: Date;
  /**
   * The balance right before the window's first entry (the last earlier entry's `balance_after`, or
   * 0).
   */
  openingBalance: bigint;
  /** The balance after the window's last entry. */
  closingBalance: bigint;
  /** The entries in ledger order, each with its charge's usage record. */
  entries(): AsyncGenerator<{ entry: ExportedEntry; usage: ExportedUsage | null }>;
  /** The usage records that cost nothing, in time order. */
  freeUsage(): AsyncGenerator<ExportedUsage>;
  /** Both, merged by time (an entry before a free record at the same instant). */
  rows(): AsyncGenerator<ExportRow>;
}

/** Rows a page: one statement each, so none runs long and memory holds a page. */
const PAGE_ROWS = 1_000;
/**
 * A row's place, its time to the microsecond as fixed-width text (so text order is time order),
 * then its id.
 */
const UTC_MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

interface Row {
  entry_id: string | null;
  entry_key: string | null;
  kind: LedgerKind | null;
  amount: string | null;
  balance_after: string | null;
  note: string | null;
  request_id: string | null;
  usage_key: string | null;
  key_id: string | null;
  project_id: string | null;
  model_id: string | null;
  endpoint: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  reasoning_tokens: number | null;
  cost: string | null;
  status: number | null;
  usage_source: string | null;
  batch_id: string | null;
}

const USAGE_COLUMNS = sql.raw(`to_char(u.created_at at time zone 'UTC', ${UTC_MICROS}) as usage_key, u.key_id,
  u.project_id, u.model_id, u.endpoint, u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.reasoning_tokens,
  u.cost_nanos::text as cost, u.status, u.usage_source, u.batch_id`);

/**
 * Opens a window of the ledger for export.
 *
 * @example
 * const x = await openLedgerExport(db, 'org_1', new Date('2026-11-01'), new Date('2026-12-01'));
 * for await (const row of x.rows()) write(row);
 */
export async function openLedgerExport(db: Database, orgId: string, from: Date, to: Date): Promise<LedgerStream> {
  const [openingBalance, closingBalance] = await Promise.all([
    balanceBefore(db, orgId, from),
    balanceBefore(db, orgId, to),
  ]);
  const window = { orgId, from: from.toISOString(), to: to.toISOString() };
  const entries = () => entryPages(db, window);
  const freeUsage = () => freeUsagePages(db, window);
  return {
    orgId,
    from,
    to,
    openingBalance,
    closingBalance,
    entries,
    freeUsage,
    rows: () => merged(entries(), freeUsage()),
  };
}

/** A whole window in memory (tests, and small windows): `openLedgerExport` read to its end. */
export async function exportLedger(db: Database, orgId: string, from: Date, to: Date): Promise<LedgerExport> {
  const stream = await openLedgerExport(db, orgId, from, to);
  const entries: ExportedEntry[] = [];
  const usage: ExportedUsage[] = [];
  for await (const row of stream.rows()) {
    if (row.entry) entries.push(row.entry);
    if (row.usage) usage.push(row.usage);
  }
  const { openingBalance, closingBalance } = stream;
  return { orgId, from, to, openingBalance, closingBalance, entries, usage };
}

type Window = { orgId: string; from: string; to: string };

async function* entryPages(
  db: Database,
  w: Window,
): AsyncGenerator<{ entry: ExportedEntry; usage: ExportedUsage | null }> {
  let after: { key: string; id: string } | null = null;
  do {
    const next: SQL = after
      ? sql`and e.created_at >= ${after.key}::timestamptz and (e.created_at, e.id) > (${after.key}::timestamptz, ${after.id}::bigint)`
      : sql``;
    const rows = rowsOf<Row>(
      await db.execute(sql`select e.id::text as entry_id, to_char(e.created_at at time zone 'UTC', ${sql.raw(UTC_MICROS)}) as entry_key,
          e.kind, e.amount_nanos::text as amount, e.balance_after_nanos::text as balance_after, e.note,
          coalesce(u.id, e.request_id) as request_id, ${USAGE_COLUMNS}
        from ${ledgerEntries} e left join ${usageRecords} u on u.id = e.request_id and u.org_id = e.org_id
        where e.org_id = ${w.orgId} and e.created_at >= ${w.from}::timestamptz and e.created_at < ${w.to}::timestamptz ${next}
        order by e.created_at, e.id limit ${PAGE_ROWS}`),
    );
    for (const row of rows) yield { entry: toEntry(row), usage: row.usage_key === null ? null : toUsage(row) };
    const last = rows.at(-1);
    after = rows.length === PAGE_ROWS && last ? { key: last.entry_key!, id: last.entry_id! } : null;
  } while (after);
}

async function* freeUsagePages(db: Database, w: Window): AsyncGenerator<ExportedUsage> {
  let after: { key: string; id: string } | null = null;
  do {
    const next: SQL = after
      ? sql`and u.created_at >= ${after.key}::timestamptz and (u.created_at, u.id) > (${after.key}::timestamptz, ${after.id})`
      : sql``;
    const rows = rowsOf<Row>(
      await db.execute(sql`select null as entry_id, u.id as request_id, ${USAGE_COLUMNS}
        from ${usageRecords} u
        where u.org_id = ${w.orgId} and u.created_at >= ${w.from}::timestamptz and u.created_at < ${w.to}::timestamptz ${next}
          and not exists (select 1 from ${ledgerEntries} l where l.request_id = u.id and l.org_id = u.org_id)
        order by u.created_at, u.id limit ${PAGE_ROWS}`),
    );
    for (const row of rows) yield toUsage(row);
    const last = rows.at(-1);
    after = rows.length === PAGE_ROWS && last ? { key: last.usage_key!, id: last.request_id! } : null;
  } while (after);
}

/** The two streams in one time order: by instant, an entry before a free record, then by id. */
async function* merged(
  entries: AsyncGenerator<{ entry: ExportedEntry; usage: ExportedUsage | null }>,
  free: AsyncGenerator<ExportedUsage>,
): AsyncGenerator<ExportRow> {
  let entry = await entries.next();
  let usage = await free.next();
  while (!entry.done || !usage.done) {
    const takeEntry = usage.done || (!entry.done && entry.value.entry.key <= usage.value.key);
    if (takeEntry) {
      yield entry.value;
      entry = await entries.next();
    } else {
      yield { entry: null, usage: usage.value as ExportedUsage };
      usage = await free.next();
    }
  }
}

/**
 * The balance after the last entry made before `at` (0 before the first), on the (org_id,
 * created_at, id) index.
 */
async function balanceBefore(db: Database, orgId: string, at: Date): Promise<bigint> {
  const [row] = rowsOf<{ balance: string }>(
    await db.execute(sql`select balance_after_nanos::text as balance from ${ledgerEntries}
      where org_id = ${orgId} and created_at < ${at.toISOString()}::timestamptz order by created_at desc, id desc limit 1`),
  );
  return row ? BigInt(row.balance) : 0n;
}

function toEntry(r: Row): ExportedEntry {
  return {
    id: Number(r.entry_id),
    key: r.entry_key!,
    createdAt: new Date(r.entry_key!),
    kind: r.kind!,
    amount: BigInt(r.amount!),
    balanceAfter: BigInt(r.balance_after!),
    note: r.note,
    requestId: r.kind === 'charge' ? r.request_id : null,
  };
}

function toUsage(r: Row): ExportedUsage {
  return {
    requestId: r.request_id!,
    key: r.usage_key!,
    createdAt: new Date(r.usage_key!),
    keyId: r.key_id!,
    projectId: r.project_id,
    modelId: r.model_id!,
    endpoint: r.endpoint!,
    promptTokens: Number(r.prompt_tokens),
    completionTokens: Number(r.completion_tokens),
    cachedTokens: Number(r.cached_tokens),
    reasoningTokens: Number(r.reasoning_tokens),
    cost: BigInt(r.cost!),
    status: Number(r.status),
    usageSource: r.usage_source!,
    batchId: r.batch_id,
    ledgerEntryId: r.entry_id === null ? null : Number(r.entry_id),
  };
}
