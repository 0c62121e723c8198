import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, type LedgerKind, usageRecords } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from './reconcile.js';

/** The most rows (ledger entries and free usage records) one export holds: a longer window is refused, not truncated. */
export const LEDGER_EXPORT_MAX_ROWS = 100_000;

/** One ledger entry and what caused it: a top-up, refund or adjustment (with its note), or a charge (with its request's usage). */
export interface ExportedEntry {
  id: number;
  createdAt: Date;
  kind: LedgerKind;
  amount: bigint;
  balanceAfter: bigint;
  note: string | null;
  requestId: string | null;
}

/** One usage record and the ledger entry that charged it (null when it cost nothing: a response-cache hit, a free model). */
export interface ExportedUsage {
  requestId: string;
  createdAt: Date;
  keyId: string;
  projectId: string | null;
  modelId: string;
  endpoint: string;
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those read from the engine's prefix cache; of the completion, the reasoning's. */
  cachedTokens: number;
  reasoningTokens: number;
  cost: bigint;
  status: number;
  usageSource: string;
  ledgerEntryId: number | null;
}

export interface LedgerExport {
  orgId: string;
  from: Date;
  to: Date;
  /** The balance right before the window's first entry (the last earlier entry's `balance_after`, or 0). */
  openingBalance: bigint;
  /** The balance after the window's last entry. */
  closingBalance: bigint;
  entries: ExportedEntry[];
  usage: ExportedUsage[];
}

interface Row {
  entry_id: string | null;
  entry_at: string | Date | null;
  kind: LedgerKind | null;
  amount: string | null;
  balance_after: string | null;
  note: string | null;
  request_id: string | null;
  usage_at: string | Date | null;
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
}

/**
 * An organization's ledger for a window [`from`, `to`): every entry made in
 * it with its cause, and every usage record it charged, plus the usage
 * records of the window that cost nothing (and so have no entry). A charge
 * is in the window of its ledger entry (made when the charge reached
 * PostgreSQL, a few milliseconds after its request, and dated in the ledger's
 * order: `wallet.ts`), so consecutive windows hold every entry exactly once,
 * and each opens at the balance the one before closed with.
 *
 * @example
 * const x = await exportLedger(db, 'org_1', new Date('2026-11-01'), new Date('2026-12-01'));
 */
export async function exportLedger(db: Database, orgId: string, from: Date, to: Date): Promise<LedgerExport> {
  const rows = rowsOf<Row>(
    await db.execute(sql`with window_entries as (
        select * from ${ledgerEntries} where org_id = ${orgId} and created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz),
      rows as (
        select e.id as entry_id, e.created_at as entry_at, e.kind, e.amount_nanos::text as amount,
          e.balance_after_nanos::text as balance_after, e.note, coalesce(u.id, e.request_id) as request_id,
          u.created_at as usage_at, u.key_id, u.project_id, u.model_id, u.endpoint, u.prompt_tokens, u.completion_tokens,
          u.cached_tokens, u.reasoning_tokens, u.cost_nanos::text as cost, u.status, u.usage_source
        from window_entries e left join ${usageRecords} u on u.id = e.request_id and u.org_id = e.org_id
        union all
        select null, null, null, null, null, null, u.id, u.created_at, u.key_id, u.project_id, u.model_id, u.endpoint,
          u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.reasoning_tokens, u.cost_nanos::text, u.status,
          u.usage_source
        from ${usageRecords} u
        where u.org_id = ${orgId} and u.created_at >= ${from.toISOString()}::timestamptz and u.created_at < ${to.toISOString()}::timestamptz
          and not exists (select 1 from ${ledgerEntries} l where l.request_id = u.id and l.org_id = u.org_id))
      select * from rows order by coalesce(entry_at, usage_at), entry_id nulls last, request_id
      limit ${LEDGER_EXPORT_MAX_ROWS + 1}`),
  );
  if (rows.length > LEDGER_EXPORT_MAX_ROWS)
    throw new GatewayError(
      'invalid_request',
      `The window holds more than ${LEDGER_EXPORT_MAX_ROWS} rows; export a shorter window.`,
      { details: [{ field: 'to', message: 'Too long a window for one export.' }] },
    );
  const entries = rows.filter((r) => r.entry_id !== null).map(toEntry);
  const opening = await openingBalance(db, orgId, from);
  return {
    orgId,
    from,
    to,
    openingBalance: opening,
    closingBalance: entries.reduce((last, e) => (e.id > last.id ? e : last), { id: -1, balanceAfter: opening })
      .balanceAfter,
    entries,
    usage: rows.filter((r) => r.usage_at !== null).map(toUsage),
  };
}

async function openingBalance(db: Database, orgId: string, from: Date): Promise<bigint> {
  const [row] = rowsOf<{ balance: string }>(
    await db.execute(sql`select balance_after_nanos::text as balance from ${ledgerEntries}
      where org_id = ${orgId} and created_at < ${from.toISOString()}::timestamptz order by id desc limit 1`),
  );
  return row ? BigInt(row.balance) : 0n;
}

function toEntry(r: Row): ExportedEntry {
  return {
    id: Number(r.entry_id),
    createdAt: new Date(r.entry_at!),
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
    createdAt: new Date(r.usage_at!),
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
    ledgerEntryId: r.entry_id === null ? null : Number(r.entry_id),
  };
}
