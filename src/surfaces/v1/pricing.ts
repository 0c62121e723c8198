import { type Context, Hono } from 'hono';
import { shownPrice } from '../../gateway/billing/money.js';
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
    data: rows.map(({ model, price }) => {
      const shown = shownPrice(price);
      return {
        object: 'model_price',
        model: model.id,
        display_name: model.displayName,
        hf_repo_id: model.hfRepoId,
        task_type: model.taskType,
        input_per_million_tokens: shown.inputPerMillion,
        // Prompt tokens the engine read from its prefix cache; the input price unless the operator
        // set one.
        cached_input_per_million_tokens: shown.cachedInputPerMillion,
        output_per_million_tokens: shown.outputPerMillion,
        input_nanos_per_token: shown.inputNanosPerToken,
        cached_input_nanos_per_token: shown.cachedInputNanosPerToken,
        output_nanos_per_token: shown.outputNanosPerToken,
        // A batch line's tokens (/v1/batches); the input and output prices unless the operator set
        // others.
        batch_input_per_million_tokens: shown.batchInputPerMillion,
        batch_output_per_million_tokens: shown.batchOutputPerMillion,
        batch_input_nanos_per_token: shown.batchInputNanosPerToken,
        batch_output_nanos_per_token: shown.batchOutputNanosPerToken,
        updated_at: price.updatedAt.toISOString(),
      };
    }),
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
