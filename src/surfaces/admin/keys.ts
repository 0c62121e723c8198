import { Hono } from 'hono';
import type { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import { definedOnly } from './schemas.js';
import * as view from './views.js';
import { budgetBody, budgetsOf, budgetView } from '../budgets.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * One API key by its id (`/admin/v1/keys/{id}`): read, change its limits and settings, revoke; its
 * budget (`/budget`: read with its spend, set). Keys are made in an organization: `orgs.ts`.
 *
 * @example
 * admin.route('/keys', keysRoutes(deps));
 */
export function keysRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const keys = new Hono<GatewayEnv>();
  const service = deps.keys;
  keys.get('/:keyId', async (c) => c.json(view.keyView(await service.get(c.req.param('keyId')))));
  keys.patch('/:keyId', async (c) => {
    const changes = keySettings(await readBody(c, body.updateKeyBody));
    return c.json(view.keyView(await service.update(c.req.param('keyId'), changes)));
  });
  keys.post('/:keyId/revoke', async (c) => c.json(view.keyView(await service.revoke(c.req.param('keyId')))));
  const currency = deps.config.currency;
  keys.get('/:keyId/budget', chargesWritten(deps.applier), async (c) =>
    c.json(budgetView(await deps.budgets.get('key', c.req.param('keyId')), currency)),
  );
  keys.put('/:keyId/budget', async (c) => {
    const budgets = budgetsOf(await readBody(c, budgetBody));
    return c.json(budgetView(await deps.budgets.set('key', c.req.param('keyId'), budgets), currency));
  });

  return keys;
}

type KeyFields = z.output<typeof body.updateKeyBody>;

/** The API's snake_case key fields to the service's names; absent fields stay absent. */
export function keySettings(input: KeyFields) {
  return definedOnly({
    name: input.name,
    requestsPerMinute: input.requests_per_minute,
    maxConcurrency: input.max_concurrency,
    tokensPerMinute: input.tokens_per_minute,
    monthlyTokens: input.monthly_tokens,
    storeRequestData: input.store_request_data,
    responseCache: input.response_cache,
    band: input.band,
  });
}
