import { type Context, Hono } from 'hono';
import { pricePerMillion } from '../../gateway/billing/money.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';

/**
 * GET /v1/pricing (public). Prices per million tokens as decimal strings, and
 * per token in nano-units (integers as strings), so nothing is lost to floats.
 */
async function pricing(c: Context<GatewayEnv>, deps: V1Deps): Promise<Response> {
  const rows = await deps.catalog.listPriced();
  return c.json({
    object: 'list',
    currency: deps.config.currency,
    data: rows.map(({ model, price }) => ({
      object: 'model_price',
      model: model.id,
      display_name: model.displayName,
      hf_repo_id: model.hfRepoId,
      task_type: model.taskType,
      input_per_million_tokens: pricePerMillion(price.inputPerToken),
      // Prompt tokens the engine read from its prefix cache; the input price unless the operator set one.
      cached_input_per_million_tokens: pricePerMillion(price.cachedInputPerToken ?? price.inputPerToken),
      output_per_million_tokens: pricePerMillion(price.outputPerToken),
      input_nanos_per_token: price.inputPerToken.toString(),
      cached_input_nanos_per_token: (price.cachedInputPerToken ?? price.inputPerToken).toString(),
      output_nanos_per_token: price.outputPerToken.toString(),
      updated_at: price.updatedAt.toISOString(),
    })),
  });
}

/**
 * `GET /v1/pricing`: public, no key.
 *
 * @example
 * v1.route('/pricing', pricingRoutes(deps));
 */
export function pricingRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.get('/', (c) => pricing(c, deps));
  return routes;
}
