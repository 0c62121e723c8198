import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { ApiDeps } from './deps.js';
import { billingRoutes } from './billing.js';
import { clustersRoutes } from './clusters.js';
import { keysRoutes } from './keys.js';
import { meRoutes } from './me.js';
import { orgsRoutes } from './orgs.js';
import { projectsRoutes } from './projects.js';
import { mountResource, type ClientOf } from './resource.js';
import { clusterRunsRoutes, runsRoutes } from './runs.js';
import { stacksRoutes } from './stacks.js';
import { usersRoutes } from './users.js';

/**
 * The generic management API (the second spec's users, projects, stacks,
 * clusters, runs, costs and keys), mounted at `/api/v1` and at `/v1`. Each
 * resource is a file of this folder whose sub-app is mounted here; its
 * access checks and its error envelope (upper-case codes, `errors.ts`) come
 * with it (`resource.ts`). Who may do what is `platform/people/permissions.ts`.
 *
 * @example
 * app.route('/api/v1', createApiRoutes(services, clientOf));
 */
export function createApiRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  mountResource(api, '/me', meRoutes(deps, clientOf));
  mountResource(api, '/users', usersRoutes(deps, clientOf));
  mountResource(api, '/projects', projectsRoutes(deps, clientOf));
  mountResource(api, '/stacks', stacksRoutes(deps, clientOf));
  // Before /clusters: a cluster's runs are a resource of their own under it.
  mountResource(api, '/clusters/:id/runs', clusterRunsRoutes(deps, clientOf));
  mountResource(api, '/clusters', clustersRoutes(deps, clientOf));
  mountResource(api, '/runs', runsRoutes(deps, clientOf));
  mountResource(api, '/billing', billingRoutes(deps, clientOf));
  mountResource(api, '/orgs', orgsRoutes(deps, clientOf));
  mountResource(api, '/keys', keysRoutes(deps, clientOf));
  return api;
}
