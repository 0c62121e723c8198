import { type Context, Hono } from 'hono';
import { formatAmount } from '../../gateway/billing/money.js';
import type { LedgerExport } from '../../gateway/billing/ledger-export.js';
import type { Difference, Verification } from '../../gateway/billing/reconcile.js';
import { parseWindow } from '../../platform/costs/window.js';
import { csvText } from '../../shared/http/csv.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { AdminDeps } from './deps.js';

/** How long a verification or export waits for this process's journaled charges to reach PostgreSQL. */
const WRITTEN_WAIT_MS = 5_000;

/**
 * Reconciling an organization's books (`/admin/v1/orgs/:orgId/wallet/...`):
 * `verify` recomputes the balance from the ledger and the ledger from the
 * usage records and names every difference; `ledger` and `ledger.csv`
 * export a window's entries, each with its cause, and the usage records
 * each charge is for.
 *
 * @example
 * admin.route('/orgs', ledgerRoutes(deps));
 */
export function ledgerRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const currency = deps.config.currency;
  const exportOf = async (c: Context<GatewayEnv>) => {
    const org = await deps.orgs.get(c.req.param('orgId')!);
    const window = parseWindow(c.req.query(), new Date());
    await deps.applier.written(WRITTEN_WAIT_MS);
    return deps.books.exportLedger(org.id, window.from, window.to);
  };

  routes.get('/:orgId/wallet/verify', async (c) => {
    const org = await deps.orgs.get(c.req.param('orgId'));
    await deps.applier.written(WRITTEN_WAIT_MS);
    return c.json(verificationView(await deps.books.verify(org.id), currency));
  });
  routes.get('/:orgId/wallet/ledger', async (c) => c.json(ledgerExportView(await exportOf(c), currency)));
  routes.get('/:orgId/wallet/ledger.csv', async (c) => {
    const exported = await exportOf(c);
    const day = (d: Date) => d.toISOString().slice(0, 10);
    return c.body(ledgerCsv(exported), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="ledger-${exported.orgId}-${day(exported.from)}-${day(exported.to)}.csv"`,
    });
  });
  return routes;
}

const DIFFERENCE_TEXT: Record<Difference['kind'], string> = {
  balance_differs: "The wallet's balance is not the sum of its ledger.",
  entry_balance_differs: "This entry's balance_after is not the previous entry's plus its amount.",
  charge_differs: "This charge is not minus its usage record's cost.",
  usage_without_charge: 'This usage record has a cost but no charge in the ledger.',
  charge_without_usage: 'This charge names no usage record of the organization.',
};

export function verificationView(v: Verification, currency: string) {
  return {
    object: 'wallet.verification' as const,
    org_id: v.orgId,
    currency,
    ok: v.differenceCount === 0,
    balance_nanos: v.walletBalance.toString(),
    ledger_sum_nanos: v.ledgerSum.toString(),
    ledger_entries: v.ledgerEntries,
    usage_records: v.usageRecords,
    difference_count: v.differenceCount,
    differences: v.differences.map((d) => ({
      kind: d.kind,
      message: DIFFERENCE_TEXT[d.kind],
      ledger_entry_id: d.ledgerEntryId,
      request_id: d.requestId,
      expected_nanos: d.expected.toString(),
      found_nanos: d.found.toString(),
    })),
  };
}

function ledgerExportView(x: LedgerExport, currency: string) {
  return {
    object: 'wallet.ledger_export' as const,
    org_id: x.orgId,
    currency,
    from: x.from.toISOString(),
    to: x.to.toISOString(),
    opening_balance: formatAmount(x.openingBalance),
    opening_balance_nanos: x.openingBalance.toString(),
    closing_balance: formatAmount(x.closingBalance),
    closing_balance_nanos: x.closingBalance.toString(),
    entries: x.entries.map((e) => ({
      id: e.id,
      created_at: e.createdAt.toISOString(),
      kind: e.kind,
      amount_nanos: e.amount.toString(),
      balance_after_nanos: e.balanceAfter.toString(),
      request_id: e.requestId,
      note: e.note,
    })),
    usage: x.usage.map((u) => ({
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
      ledger_entry_id: u.ledgerEntryId,
    })),
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
] as const;

/** One row per ledger entry (with its charge's usage record), then one per usage record that cost nothing. Amounts as integers (bigint: never read as formulas). */
function ledgerCsv(x: LedgerExport): string {
  const usageOf = new Map(x.usage.map((u) => [u.requestId, u]));
  const usageCells = (u: LedgerExport['usage'][number]): unknown[] => [
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
  ];
  const entryRows = x.entries.map((e) => {
    const usage = e.requestId ? usageOf.get(e.requestId) : undefined;
    const head = [e.id, e.createdAt.toISOString(), e.kind, e.amount, e.balanceAfter, e.note];
    return usage ? [...head, ...usageCells(usage)] : [...head, e.requestId];
  });
  const freeRows = x.usage
    .filter((u) => u.ledgerEntryId === null)
    .map((u) => [null, null, null, null, null, null, ...usageCells(u)]);
  return csvText(CSV_COLUMNS, [...entryRows, ...freeRows]);
}
