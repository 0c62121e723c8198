import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Prices per model (`/admin/v1/prices`), per million tokens in the gateway's
 * currency, kept exactly (`gateway/billing/money.ts`).
 *
 * @example
 * admin.route('/prices', pricesRoutes(deps));
 */
export function pricesRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const prices = new Hono<GatewayEnv>();
  const { catalog } = deps;
  const currency = deps.config.currency;
  prices.put('/:modelId{.+}', async (c) => {
    const input = await readBody(c, body.setPriceBody);
    const price = await catalog.setPrice(c.req.param('modelId'), input.input_per_million, input.output_per_million, {
      cachedInputPerToken: input.cached_input_per_million ?? null,
      batchInputPerToken: input.batch_input_per_million ?? null,
      batchOutputPerToken: input.batch_output_per_million ?? null,
    });
    return c.json(view.priceView(price, currency));
  });
  prices.get('/:modelId{.+}', async (c) =>
    c.json(view.priceView(await catalog.getPrice(c.req.param('modelId')), currency)),
  );
  prices.get('/', async (c) =>
    c.json(view.listOf((await catalog.listPrices()).map((p) => view.priceView(p, currency)))),
  );

  return prices;
}
