import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Node profiles (`/admin/v1/profiles`): the kinds of node clusters are made
 * of (GPUs per node, GPU model, CPU, memory), which rate cards price.
 *
 * @example
 * admin.route('/profiles', profilesRoutes(deps));
 */
export function profilesRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const profiles = new Hono<GatewayEnv>();
  profiles.post('/', async (c) => {
    const input = await readBody(c, body.createProfileBody);
    const profile = await deps.clusters.addProfile({
      name: input.name,
      gpusPerNode: input.gpus_per_node,
      gpuModel: input.gpu_model,
      cpuCores: input.cpu_cores,
      memoryGib: input.memory_gib,
    });
    return c.json(view.profileView(profile), 201);
  });
  profiles.get('/', async (c) => c.json(view.listOf((await deps.clusters.listProfiles()).map(view.profileView))));

  return profiles;
}
