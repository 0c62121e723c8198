import { type Context, Hono } from 'hono';
import { parseWindow } from '../../platform/costs/window.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { AdminDeps } from './deps.js';
import { textStream } from '../../shared/http/text-stream.js';
import { ledgerCsv, ledgerJson } from './ledger-export-views.js';
import { verificationLines, verificationView } from './wallet-verify.js';

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

  // From the last checkpoint, or all of it (`full=true`); as NDJSON with progress lines when asked
  // for.
  routes.get('/:orgId/wallet/verify', async (c) => {
    const org = await deps.orgs.get(c.req.param('orgId'));
    const full = c.req.query('full');
    if (full !== undefined && full !== 'true' && full !== 'false')
      throw new GatewayError('invalid_request', 'full must be true or false.');
    await deps.applier.written(WRITTEN_WAIT_MS);
    const steps = deps.books.verifying(org.id, { full: full === 'true' });
    // The first page is read before the status is sent: an unknown wallet is a 404, a timeout a
    // 503.
    const first = await steps.next();
    if (!c.req.header('accept')?.includes('application/x-ndjson')) {
      let step = first;
      while (!step.done) step = await steps.next();
      return c.json(verificationView(step.value, currency));
    }
    const body = deps.heapGrowth.whileStreaming(textStream(verificationLines(steps, first, currency), 1));
    return c.body(body, 200, { 'content-type': 'application/x-ndjson; charset=utf-8' });
  });
  // Both written as they are read, a page at a time: a year's window is never held in memory.
  routes.get('/:orgId/wallet/ledger', async (c) => {
    const body = deps.heapGrowth.whileStreaming(textStream(ledgerJson(await exportOf(c), currency)));
    return c.body(body, 200, { 'content-type': 'application/json; charset=utf-8' });
  });
  routes.get('/:orgId/wallet/ledger.csv', async (c) => {
    const exported = await exportOf(c);
    const day = (d: Date) => d.toISOString().slice(0, 10);
    return c.body(deps.heapGrowth.whileStreaming(ledgerCsv(exported)), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="ledger-${exported.orgId}-${day(exported.from)}-${day(exported.to)}.csv"`,
    });
  });
  return routes;
}
