import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { Services } from '../../services.js';
import { billingRoutes } from './billing.js';
import { clustersRoutes } from './clusters.js';
import { meRoutes } from './me.js';
import { orgsRoutes } from './orgs.js';
import { projectsRoutes } from './projects.js';
import { mountResource, type ClientOf } from './resource.js';
import { clusterRunsRoutes, runsRoutes } from './runs.js';
import { stacksRoutes } from './stacks.js';
import { usersRoutes } from './users.js';

/**
 * The generic management API (the second spec's users, projects, stacks,
 * clusters, runs and costs), mounted at `/api/v1` and at `/v1`. Each
 * resource is a file of this folder whose sub-app is mounted here; its
 * access checks and its error envelope (upper-case codes, `errors.ts`) come
 * with it (`resource.ts`). Who may do what is `platform/people/permissions.ts`.
 *
 * @example
 * app.route('/api/v1', createApiRoutes(services, clientOf));
 */
export function createApiRoutes(services: Services, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  mountResource(api, '/me', meRoutes(services, clientOf));
  mountResource(api, '/users', usersRoutes(services, clientOf));
  mountResource(api, '/projects', projectsRoutes(services, clientOf));
  mountResource(api, '/stacks', stacksRoutes(services, clientOf));
  // Before /clusters: a cluster's runs are a resource of their own under it.
  mountResource(api, '/clusters/:id/runs', clusterRunsRoutes(services, clientOf));
  mountResource(api, '/clusters', clustersRoutes(services, clientOf));
  mountResource(api, '/runs', runsRoutes(services, clientOf));
  mountResource(api, '/billing', billingRoutes(services, clientOf));
  mountResource(api, '/orgs', orgsRoutes(services, clientOf));
  return api;
}
