import { type Context, Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { costsCsv, csvFileName } from '../../platform/costs/csv.js';
import { parseWindow } from '../../platform/costs/window.js';
import * as body from './schemas.js';

/**
 * The cost report of every organization (or one, `org_id`) for the
 * operator, as JSON (`/admin/v1/costs`) or CSV (`/admin/v1/costs.csv`).
 *
 * @example
 * admin.route('/', costsRoutes(deps));
 */
export function costsRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const report = new Hono<GatewayEnv>();
  const { costs } = deps;

  const reportOf = async (c: Context<GatewayEnv>) => {
    const { org_id: orgId } = readQuery(c, body.costsQuery);
    if (orgId) await deps.orgs.get(orgId);
    const now = new Date();
    return costs.report({ orgId: orgId ?? null }, parseWindow(c.req.query(), now), now);
  };
  report.get('/costs', async (c) => c.json(await reportOf(c)));
  report.get('/costs.csv', async (c) => {
    const costsReport = await reportOf(c);
    return c.body(costsCsv(costsReport), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${csvFileName(costsReport)}"`,
    });
  });

  return report;
}
