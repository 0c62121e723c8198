import { type Context, Hono } from 'hono';
import type { Difference, Verification } from '../../gateway/billing/reconcile.js';
import { parseWindow } from '../../platform/costs/window.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { AdminDeps } from './deps.js';
import { ledgerCsv, ledgerJson, textStream } from './ledger-export-views.js';

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
    return deps.books.openLedgerExport(org.id, window.from, window.to);
  };

  routes.get('/:orgId/wallet/verify', async (c) => {
    const org = await deps.orgs.get(c.req.param('orgId'));
    await deps.applier.written(WRITTEN_WAIT_MS);
    return c.json(verificationView(await deps.books.verify(org.id), currency));
  });
  // Both written as they are read, a page at a time: a year's window is never held in memory.
  routes.get('/:orgId/wallet/ledger', async (c) => {
    const body = textStream(ledgerJson(await exportOf(c), currency));
    return c.body(body, 200, { 'content-type': 'application/json; charset=utf-8' });
  });
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
