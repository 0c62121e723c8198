import type { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { Services } from '../../services.js';
import { apiResource, type ClientOf } from './resource.js';
import { userView } from './users.js';

/**
 * Who is calling: `GET /api/v1/me` (and `/v1/me`), the user behind the key or session.
 *
 * @example
 * mountResource(api, '/me', meRoutes(services, clientOf));
 */
export function meRoutes(services: Services, clientOf: ClientOf): Hono<GatewayEnv> {
  const me = apiResource(services, clientOf);
  me.get('/', (c) => c.json(userView(c.get('actor').user)));
  return me;
}
