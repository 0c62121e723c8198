import { type Context, Hono } from 'hono';
import type { BatchCaller } from '../../gateway/batches/service.js';
import { keyHeaderOf, requireKey } from '../../gateway/requests/auth.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readJsonObject } from '../../shared/http/request.js';
import type { V1Deps } from './deps.js';

/**
 * OpenAI's Batch API: `POST /v1/batches` (from a file uploaded with purpose `batch`),
 * `GET /v1/batches` (a page, newest first), `GET /v1/batches/{id}` and
 * `POST /v1/batches/{id}/cancel`. A batch is its organization's and its key's project's: any other
 * id, another organization's included, is the same 404. `deps.batches` does the work; its runner
 * runs the lines (`gateway/batches/runner.ts`).
 *
 * @example
 * v1.route('/batches', batchesRoutes(deps));
 */
export function batchesRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const guarded = [requireKey(deps.keys), admittedByKeyLimits(deps.gateKeeper)] as const;
  routes.post('/', ...guarded, async (c) => {
    const { body } = await readJsonObject(
      c,
      deps.config.maxBodyBytes,
      deps.config.oversizeDrain,
      deps.config.maxJsonDepth,
    );
    return c.json(await deps.batches.create(callerOf(c, deps), body));
  });
  routes.get('/', ...guarded, async (c) => c.json(await deps.batches.list(callerOf(c, deps), pageOf(c))));
  routes.get('/:id', ...guarded, async (c) => c.json(await deps.batches.get(callerOf(c, deps), c.req.param('id'))));
  routes.post('/:id/cancel', ...guarded, async (c) =>
    c.json(await deps.batches.cancel(callerOf(c, deps), c.req.param('id'))),
  );
  return routes;
}

/** The key's organization and project, and the key itself: a batch's lines run under it. */
function callerOf(c: Context<GatewayEnv>, deps: V1Deps): BatchCaller {
  const caller = c.get('caller');
  return {
    orgId: caller.orgId,
    projectId: caller.projectId,
    keyId: caller.id,
    keyHash: deps.keys.secretHashOf(keyHeaderOf(c)),
  };
}

/** `after` and `limit` (1-100, default 20), as OpenAI reads them. */
function pageOf(c: Context<GatewayEnv>): { after?: string; limit: number } {
  const { limit = '20', after } = c.req.query();
  if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
    throw new GatewayError('invalid_request', 'limit must be a whole number from 1 to 100.', {
      details: [{ field: 'limit', message: 'must be a whole number from 1 to 100' }],
    });
  return { limit: Number(limit), after: after || undefined };
}
