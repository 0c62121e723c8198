import type { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { ApiDeps } from './deps.js';
import { apiResource, type ClientOf } from './resource.js';
import { userView } from './users.js';

/**
 * Who is calling: `GET /api/v1/me` (and `/v1/me`), the user behind the key or session.
 *
 * @example
 * mountResource(api, '/me', meRoutes(deps, clientOf));
 */
export function meRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const me = apiResource(deps, clientOf);
  me.get('/', (c) => c.json(userView(c.get('actor').user)));
  return me;
}
