import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody, readQuery, toDetails } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Conversion rates (`/admin/v1/conversion-rates/{base}/{quote}/{date}`): the
 * operator's exact decimal rates by day, with which reports convert a rate
 * card's currency into an organization's billing currency.
 *
 * @example
 * admin.route('/conversion-rates', conversionRatesRoutes(deps));
 */
export function conversionRatesRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const rates = new Hono<GatewayEnv>();
  const { costs } = deps;

  /** The pair and date in the path, checked like a body: each bad part named. */
  const rateKey = (params: Record<string, string>) => {
    const key = body.conversionRateKey.safeParse(params);
    if (!key.success)
      throw new GatewayError('invalid_request', 'Invalid path parameters.', { details: toDetails(key.error.issues) });
    return { base: key.data.base, quote: key.data.quote, effectiveOn: key.data.date };
  };
  rates.put('/:base/:quote/:date', async (c) => {
    const key = rateKey(c.req.param());
    const { rate } = await readBody(c, body.setConversionRateBody);
    const { row, created } = await costs.conversionRates.set({ ...key, rate });
    return c.json(view.conversionRateView(row), created ? 201 : 200);
  });
  rates.get('/', async (c) => {
    const filter = readQuery(c, body.conversionRatesQuery);
    return c.json(view.listOf((await costs.conversionRates.list(filter)).map(view.conversionRateView)));
  });
  rates.delete('/:base/:quote/:date', async (c) => {
    await costs.conversionRates.delete(rateKey(c.req.param()));
    return c.body(null, 204);
  });

  return rates;
}
