import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { asConflict } from './conflicts.js';
import * as body from './schemas.js';
import { definedOnly } from './schemas.js';
import * as view from './views.js';

/**
 * The model catalog (`/admin/v1/models`): list (disabled ones with
 * `include_disabled`), add, change. Prices are `prices.ts`.
 *
 * @example
 * admin.route('/models', modelsRoutes(deps));
 */
export function modelsRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const models = new Hono<GatewayEnv>();
  const { catalog } = deps;
  models.get('/', async (c) => {
    const { include_disabled } = readQuery(c, body.modelsQuery);
    const [models, prices] = await Promise.all([
      catalog.list({ includeDisabled: include_disabled === 'true' }),
      catalog.listPrices(),
    ]);
    const priceOf = new Map(prices.map((price) => [price.modelId, price]));
    return c.json(view.listOf(models.map((model) => view.operatorModelView(model, priceOf.get(model.id) ?? null))));
  });
  models.post('/', async (c) => {
    const input = await readBody(c, body.createModelBody);
    const model = await asConflict(
      catalog.add({
        id: input.id,
        displayName: input.display_name,
        hfRepoId: input.hf_repo_id,
        taskType: input.task_type,
        contextLength: input.context_length,
        enabled: input.enabled,
      }),
      'A model with this id, display name or Hugging Face repo id already exists.',
    );
    return c.json(view.operatorModelView(model, null), 201);
  });
  models.patch('/:id{.+}', async (c) => {
    const input = await readBody(c, body.updateModelBody);
    const id = c.req.param('id');
    const changes = { displayName: input.display_name, contextLength: input.context_length, enabled: input.enabled };
    const model = await asConflict(
      catalog.update(id, definedOnly(changes)),
      'Another model already uses this display name.',
    );
    const price = (await catalog.listPrices()).find((p) => p.modelId === model.id) ?? null;
    return c.json(view.operatorModelView(model, price));
  });

  return models;
}
