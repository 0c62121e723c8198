import type { Context, Hono } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { readBody, readQuery, toDetails } from '../http/validate.js';
import type { Services } from '../services.js';
import { costsCsv, csvFileName } from '../costs/csv.js';
import { parseWindow } from '../costs/window.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * The operator's side of costs under `/admin/v1` (behind the operator token,
 * like every admin route): rate cards, conversion rates, and the cost report
 * of every organization (or one, `org_id`), as JSON or CSV.
 *
 * @example
 * registerCostAdminRoutes(admin, services);
 */
export function registerCostAdminRoutes(admin: Hono<GatewayEnv>, services: Services): void {
  const { costs } = services;

  admin.post('/rate-cards', async (c) => {
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
  admin.get('/rate-cards', async (c) => {
    const { profile } = readQuery(c, body.rateCardsQuery);
    return c.json(view.listOf((await costs.rateCards.list(profile)).map(view.rateCardView)));
  });
  admin.delete('/rate-cards/:id', async (c) => {
    await costs.rateCards.delete(c.req.param('id'));
    return c.body(null, 204);
  });

  /** The pair and date in the path, checked like a body: each bad part named. */
  const rateKey = (params: Record<string, string>) => {
    const key = body.conversionRateKey.safeParse(params);
    if (!key.success) throw new GatewayError('invalid_request', 'Invalid path parameters.', { details: toDetails(key.error.issues) });
    return { base: key.data.base, quote: key.data.quote, effectiveOn: key.data.date };
  };
  admin.put('/conversion-rates/:base/:quote/:date', async (c) => {
    const key = rateKey(c.req.param());
    const { rate } = await readBody(c, body.setConversionRateBody);
    const { row, created } = await costs.conversionRates.set({ ...key, rate });
    return c.json(view.conversionRateView(row), created ? 201 : 200);
  });
  admin.get('/conversion-rates', async (c) => {
    const filter = readQuery(c, body.conversionRatesQuery);
    return c.json(view.listOf((await costs.conversionRates.list(filter)).map(view.conversionRateView)));
  });
  admin.delete('/conversion-rates/:base/:quote/:date', async (c) => {
    await costs.conversionRates.delete(rateKey(c.req.param()));
    return c.body(null, 204);
  });

  const report = async (c: Context<GatewayEnv>) => {
    const { org_id: orgId } = readQuery(c, body.costsQuery);
    if (orgId) await services.orgs.get(orgId);
    const now = new Date();
    return costs.report({ orgId: orgId ?? null }, parseWindow(c.req.query(), now), now);
  };
  admin.get('/costs', async (c) => c.json(await report(c)));
  admin.get('/costs.csv', async (c) => {
    const costsReport = await report(c);
    return c.body(costsCsv(costsReport), 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${csvFileName(costsReport)}"` });
  });
}
