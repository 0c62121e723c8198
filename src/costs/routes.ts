import type { Hono } from 'hono';
import { z } from 'zod';
import type { GatewayEnv, SignedInActor } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { readBody } from '../http/validate.js';
import type { Services } from '../services.js';
import { costsCsv, csvFileName } from './csv.js';
import { currencies, currencyCode } from './currencies.js';
import { parseWindow } from './window.js';

const billingCurrencyBody = z.strictObject({ currency: currencyCode.nullable() });

/** The paths these routes add under the generic API (its access middleware guards them). */
export const COST_PATHS = ['/billing/*', '/orgs/*'];

/**
 * Cost reports and billing currencies under the generic API (`/v1/billing/…`,
 * `/v1/orgs/{id}/billing-currency`, and the same under `/api/v1`): every
 * user sees their organization's costs, platform admins every
 * organization's; owners and admins (and platform admins) set their
 * organization's billing currency. Rate cards and conversion rates are the
 * operator's (`/admin/v1`, `admin/costs-routes.ts`).
 *
 * @example
 * registerCostRoutes(api, services);
 */
export function registerCostRoutes(api: Hono<GatewayEnv>, services: Services): void {
  const { costs } = services;
  const scope = (actor: SignedInActor) => ({ orgId: actor.platformAdmin ? null : actor.orgId });

  api.get('/billing/costs', async (c) => {
    const now = new Date();
    return c.json(await costs.report(scope(c.get('actor')), parseWindow(c.req.query(), now), now));
  });

  api.get('/billing/costs.csv', async (c) => {
    const now = new Date();
    const report = await costs.report(scope(c.get('actor')), parseWindow(c.req.query(), now), now);
    return c.body(costsCsv(report), 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${csvFileName(report)}"` });
  });

  api.get('/billing/currencies', (c) => c.json({ object: 'list', data: [...currencies().values()] }));

  api.get('/orgs/:id/billing-currency', async (c) => {
    const orgId = visibleOrg(c.get('actor'), c.req.param('id'));
    return c.json({ org_id: orgId, currency: await costs.billingCurrency(orgId) });
  });

  api.patch('/orgs/:id/billing-currency', async (c) => {
    const actor = c.get('actor');
    const orgId = visibleOrg(actor, c.req.param('id'));
    if (actor.role === 'member' && !actor.platformAdmin) throw new GatewayError('forbidden', "Only the organization's owners and admins set its billing currency.");
    const { currency } = await readBody(c, billingCurrencyBody);
    return c.json({ org_id: orgId, currency: await costs.setBillingCurrency(orgId, currency) });
  });
}

/** Another organization's id is 404 (not 403), so ids of others are not confirmed; platform admins see all. */
function visibleOrg(actor: SignedInActor, orgId: string): string {
  if (!actor.platformAdmin && actor.orgId !== orgId) throw new GatewayError('not_found', `Organization ${orgId} does not exist.`);
  return orgId;
}
