import type { Hono } from 'hono';
import { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody } from '../../shared/http/validate.js';
import type { ApiDeps } from './deps.js';
import { currencyCode } from '../../platform/costs/currencies.js';
import { apiResource, type ClientOf } from './resource.js';

const billingCurrencyBody = z.strictObject({ currency: currencyCode.nullable() });

/**
 * An organization's settings under the generic API: its billing currency
 * (`/v1/orgs/{id}/billing-currency`, and under `/api/v1`), which everyone in
 * it reads and its owners and admins (and platform admins) set.
 *
 * @example
 * mountResource(api, '/orgs', orgsRoutes(deps, clientOf));
 */
export function orgsRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = apiResource(deps, clientOf);
  const { costs } = deps;

  api.get('/:id/billing-currency', async (c) => {
    const orgId = visibleOrg(c.get('actor'), c.req.param('id'));
    return c.json({ org_id: orgId, currency: await costs.billingCurrency(orgId) });
  });

  api.patch('/:id/billing-currency', async (c) => {
    const actor = c.get('actor');
    const orgId = visibleOrg(actor, c.req.param('id'));
    if (actor.role === 'member' && !actor.platformAdmin)
      throw new GatewayError('forbidden', "Only the organization's owners and admins set its billing currency.");
    const { currency } = await readBody(c, billingCurrencyBody);
    return c.json({ org_id: orgId, currency: await costs.setBillingCurrency(orgId, currency) });
  });

  return api;
}

/**
 * Another organization's id is 404 (not 403), so ids of others are not confirmed; platform admins
 * see all.
 */
function visibleOrg(actor: SignedInActor, orgId: string): string {
  if (!actor.platformAdmin && actor.orgId !== orgId)
    throw new GatewayError('not_found', `Organization ${orgId} does not exist.`);
  return orgId;
}
