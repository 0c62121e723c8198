import { type Context, Hono } from 'hono';
import type { ModelRow } from '../../gateway/catalog/service.js';
import { TASK_TYPES, type TaskType } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { V1Deps } from './deps.js';
import { requireKey } from '../../gateway/requests/auth.js';

/** OpenAI's model object, plus the catalog's own fields. */
export function modelView(model: ModelRow) {
  return {
    id: model.id,
    object: 'model' as const,
    created: Math.floor(model.createdAt.getTime() / 1000),
    owned_by: 'tollgate',
    display_name: model.displayName,
    hf_repo_id: model.hfRepoId,
    task_type: model.taskType,
    context_length: model.contextLength,
  };
}

/** GET /v1/models, optionally `?task_type=embedding`. Disabled models are not listed. */
async function listModels(c: Context<GatewayEnv>, deps: V1Deps): Promise<Response> {
  const taskType = c.req.query('task_type');
  if (taskType !== undefined && !TASK_TYPES.includes(taskType as TaskType)) {
    throw new GatewayError('invalid_request', `task_type must be one of ${TASK_TYPES.join(', ')}.`, {
      details: [{ field: 'task_type', message: `must be one of ${TASK_TYPES.join(', ')}` }],
    });
  }
  const rows = await deps.catalog.list({ taskType: taskType as TaskType | undefined });
  return c.json({ object: 'list', data: rows.map(modelView) });
}

/** GET /v1/models/{id}: by any of the model's names; ids may contain slashes. */
async function getModel(c: Context<GatewayEnv>, deps: V1Deps): Promise<Response> {
  // Hono has decoded the path already; an id that is not valid UTF-8 or holds NUL names no model.
  const name = c.req.param('id') ?? '';
  if (name.includes('\u0000') || name.includes('\uFFFD') || /%[0-9A-Fa-f]{2}/.test(name)) {
    throw new GatewayError('model_not_found', 'The model in the path does not exist or is not enabled.', {
      status: 404,
    });
  }
  try {
    const { model } = await deps.catalog.resolve(name);
    return c.json(modelView(model));
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'model_not_found') {
      throw new GatewayError('model_not_found', `The model \`${name}\` does not exist or is not enabled.`, {
        status: 404,
      });
    }
    throw error;
  }
}

/**
 * `GET /v1/models` and `GET /v1/models/{id}` (an id may hold slashes), with a key.
 *
 * @example
 * v1.route('/models', modelsRoutes(deps));
 */
export function modelsRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const models = new Hono<GatewayEnv>();
  const auth = requireKey(deps.keys);
  models.get('/', auth, (c) => listModels(c, deps));
  models.get('/:id{.+}', auth, (c) => getModel(c, deps));
  return models;
}
