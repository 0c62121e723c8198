import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Rate cards (`/admin/v1/rate-cards`): what a node-hour and a GPU-hour of a
 * profile cost, in a currency, from a date; the cost reports price
 * allocations with them (`platform/costs/`).
 *
 * @example
 * admin.route('/rate-cards', rateCardsRoutes(deps));
 */
export function rateCardsRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const cards = new Hono<GatewayEnv>();
  const { costs } = deps;

  cards.post('/', async (c) => {
    const input = await readBody(c, body.createRateCardBody);
    const card = await costs.rateCards.add({
      profile: input.profile,
      currency: input.currency,
      nodeHourPrice: input.node_hour_price,
      gpuHourPrice: input.gpu_hour_price,
      effectiveFrom: input.effective_from,
      effectiveTo: input.effective_to ?? null,
    });
    return c.json(view.rateCardView(card), 201);
  });
  cards.get('/', async (c) => {
    const { profile } = readQuery(c, body.rateCardsQuery);
    return c.json(view.listOf((await costs.rateCards.list(profile)).map(view.rateCardView)));
  });
  cards.delete('/:id', async (c) => {
    await costs.rateCards.delete(c.req.param('id'));
    return c.body(null, 204);
  });

  return cards;
}
