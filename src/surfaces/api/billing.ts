import type { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import type { ApiDeps } from './deps.js';
import { costsCsv, csvFileName } from '../../platform/costs/csv.js';
import { currencies } from '../../platform/costs/currencies.js';
import { parseWindow } from '../../platform/costs/window.js';
import { apiResource, type ClientOf } from './resource.js';

/**
 * Cost reports under the generic API (`/v1/billing/costs`, `.csv`, and the
 * currencies they may be shown in; the same under `/api/v1`): every user
 * sees their organization's costs, platform admins every organization's.
 * Rate cards and conversion rates are the operator's (`/admin/v1`,
 * `surfaces/admin/costs.ts`).
 *
 * @example
 * mountResource(api, '/billing', billingRoutes(deps, clientOf));
 */
export function billingRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = apiResource(deps, clientOf);
  const { costs } = deps;
  const scope = (actor: SignedInActor) => ({ orgId: actor.platformAdmin ? null : actor.orgId });

  api.get('/costs', async (c) => {
    const now = new Date();
    return c.json(await costs.report(scope(c.get('actor')), parseWindow(c.req.query(), now), now));
  });

  api.get('/costs.csv', async (c) => {
    const now = new Date();
    const report = await costs.report(scope(c.get('actor')), parseWindow(c.req.query(), now), now);
    return c.body(costsCsv(report), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${csvFileName(report)}"`,
    });
  });

  api.get('/currencies', (c) => c.json({ object: 'list', data: [...currencies().values()] }));
  return api;
}
