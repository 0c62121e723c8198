import type { ExportedEntry, ExportedUsage, LedgerStream } from '../../gateway/billing/ledger-export.js';
import { formatAmount } from '../../gateway/billing/money.js';
import { csvLines } from '../../shared/http/csv.js';
import { textStream } from '../../shared/http/text-stream.js';

/**
 * The JSON export, `wallet.ledger_export`, written as its rows are read: its balances first, then
 * `entries`, then `usage`.
 */
export async function* ledgerJson(x: LedgerStream, currency: string): AsyncGenerator<string> {
  const head = {
    object: 'wallet.ledger_export' as const,
    org_id: x.orgId,
    currency,
    from: x.from.toISOString(),
    to: x.to.toISOString(),
    opening_balance: formatAmount(x.openingBalance),
    opening_balance_nanos: x.openingBalance.toString(),
    closing_balance: formatAmount(x.closingBalance),
    closing_balance_nanos: x.closingBalance.toString(),
  };
  yield `${JSON.stringify(head).slice(0, -1)},"entries":[`;
  let first = true;
  for await (const { entry } of x.entries()) {
    yield `${first ? '' : ','}${JSON.stringify(entryView(entry))}`;
    first = false;
  }
  yield '],"usage":[';
  first = true;
  for await (const row of x.rows()) {
    if (!row.usage) continue;
    yield `${first ? '' : ','}${JSON.stringify(usageView(row.usage))}`;
    first = false;
  }
  yield ']}';
}

function entryView(e: ExportedEntry) {
  return {
    id: e.id,
    created_at: e.createdAt.toISOString(),
    kind: e.kind,
    amount_nanos: e.amount.toString(),
    balance_after_nanos: e.balanceAfter.toString(),
    request_id: e.requestId,
    note: e.note,
  };
}

function usageView(u: ExportedUsage) {
  return {
    request_id: u.requestId,
    created_at: u.createdAt.toISOString(),
    key_id: u.keyId,
    project_id: u.projectId,
    model: u.modelId,
    endpoint: u.endpoint,
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    cached_tokens: u.cachedTokens,
    reasoning_tokens: u.reasoningTokens,
    cost_nanos: u.cost.toString(),
    status: u.status,
    usage_source: u.usageSource,
    batch_id: u.batchId,
    ledger_entry_id: u.ledgerEntryId,
  };
}

const CSV_COLUMNS = [
  'ledger_entry_id',
  'entry_time_utc',
  'kind',
  'amount_nanos',
  'balance_after_nanos',
  'note',
  'request_id',
  'usage_time_utc',
  'key_id',
  'project_id',
  'model',
  'endpoint',
  'prompt_tokens',
  'completion_tokens',
  'cost_nanos',
  'status',
  'usage_source',
  // Last, so the earlier columns keep their places: of prompt_tokens, and of completion_tokens.
  'cached_tokens',
  'reasoning_tokens',
  // Last, for the same reason: the batch a request was a line of, empty for any other.
  'batch_id',
] as const;

const usageCells = (u: ExportedUsage): unknown[] => [
  u.requestId,
  u.createdAt.toISOString(),
  u.keyId,
  u.projectId,
  u.modelId,
  u.endpoint,
  u.promptTokens,
  u.completionTokens,
  u.cost,
  u.status,
  u.usageSource,
  u.cachedTokens,
  u.reasoningTokens,
  u.batchId,
];

/**
 * The CSV export, written as its rows are read and only as fast as the client reads them: one row
 * per ledger entry (with its charge's usage record), then one per usage record that cost nothing.
 * Amounts as integers (bigint: never read as formulas).
 */
export function ledgerCsv(x: LedgerStream): ReadableStream<Uint8Array> {
  return textStream(csvLines(CSV_COLUMNS, ledgerCsvRows(x)));
}

async function* ledgerCsvRows(x: LedgerStream): AsyncGenerator<unknown[]> {
  for await (const { entry: e, usage } of x.entries()) {
    const head = [e.id, e.createdAt.toISOString(), e.kind, e.amount, e.balanceAfter, e.note];
    yield usage ? [...head, ...usageCells(usage)] : [...head, e.requestId];
  }
  for await (const u of x.freeUsage()) yield [null, null, null, null, null, null, ...usageCells(u)];
}
