import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { usageSummary } from '../v1/usage.js';
import * as body from './schemas.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * The operator's usage report: `GET /admin/v1/usage/summary`, the same
 * answer and parameters as a key's `/v1/usage/summary`, over every
 * organization or the one named by `org_id` (an unknown one is a 404).
 *
 * @example
 * admin.route('/usage', usageRoutes(deps));
 */
export function usageRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const usage = new Hono<GatewayEnv>();
  usage.get('/summary', chargesWritten(deps.applier), async (c) => {
    const { org_id: orgId } = readQuery(c, body.costsQuery);
    if (orgId) await deps.orgs.get(orgId);
    return usageSummary(c, deps, orgId ?? null);
  });
  return usage;
}
