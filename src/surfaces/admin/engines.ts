import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * The engines behind each model (`/admin/v1/engines`): their replicas and
 * state; Docker engines scale and restart (rolling).
 *
 * @example
 * admin.route('/engines', enginesRoutes(deps));
 */
export function enginesRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const engines = new Hono<GatewayEnv>();
  engines.get('/', (c) => c.json(view.listOf(deps.fleet.status().map(view.engineView))));
  const managedEngine = (model: string) => managedEngineOf(deps, model);
  engines.post('/:model{.+}/scale', async (c) => {
    const engine = managedEngine(c.req.param('model'));
    const { replicas } = await readBody(c, body.scaleEngineBody);
    await engine.scale(replicas);
    return c.json(view.engineView(engine.status()));
  });
  engines.post('/:model{.+}/restart', async (c) => {
    const engine = managedEngine(c.req.param('model'));
    await engine.restart();
    return c.json(view.engineView(engine.status()));
  });

  return engines;
}

/**
 * The engine of `model` that the gateway runs and so can scale and restart
 * (Docker engines): 404 when no engine serves it, 409 when the operator runs
 * it. The operator API and the portal's operator engines page both act
 * through it.
 *
 * @example
 * await managedEngineOf(deps, 'qwen-7b').scale(2);
 */
export function managedEngineOf(deps: Pick<AdminDeps, 'fleet'>, model: string) {
  const engine = deps.fleet.engines().find((e) => e.modelId === model);
  if (!engine) throw new GatewayError('not_found', `No engine serves model ${model}.`, { status: 404 });
  if (!engine.scale || !engine.restart)
    throw new GatewayError(
      'conflict',
      `The ${engine.kind} engine of ${model} is not run by the gateway; only Docker engines scale and restart.`,
    );
  return engine as Required<Pick<typeof engine, 'scale' | 'restart' | 'status'>>;
}
