import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { every } from 'hono/combine';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES, requireJsonBody } from '../../shared/http/request.js';
import { refuseNul } from '../../shared/http/refuse-nul.js';
import type { ApiDeps } from './deps.js';
import { apiAccess } from './access.js';
import { renderApiError } from './errors.js';

/**
 * The client's address and whether it came over HTTPS, as the trusted proxies tell it
 * (`shared/http/client-address.ts`).
 */
export type ClientOf = (c: Context) => { address: string; https: boolean };

/**
 * A resource of the generic API: a Hono sub-app whose every request passes
 * the API's checks (who is calling and the hourly limits, no NUL in the
 * path, then the body's type and size: `bodyRules`, by default JSON up to
 * MANAGEMENT_MAX_BODY_BYTES), and whose errors use the API's envelope.
 * The guard is `'*'` of the sub-app, so it covers the resource's own paths
 * only: the API is mounted at `/v1` too, beside the gateway's routes.
 * Access comes first: every answer, a 404 or 413 included, is counted and
 * carries the limit headers, and no body is read for a stranger.
 *
 * @example
 * const users = apiResource(deps, clientOf);
 * users.get('/:id', …);
 */
export function apiResource(
  deps: ApiDeps,
  clientOf: ClientOf,
  ...bodyRules: MiddlewareHandler<GatewayEnv>[]
): Hono<GatewayEnv> {
  const resource = new Hono<GatewayEnv>();
  resource.onError((error, c) => renderApiError(error, c, deps.log));
  const rules =
    bodyRules.length > 0
      ? bodyRules
      : [requireJsonBody(), limitBody(MANAGEMENT_MAX_BODY_BYTES, deps.config.oversizeDrain)];
  resource.use('*', every(apiAccess(deps, clientOf), refuseNul(), ...rules));
  return resource;
}

/**
 * Mounts a resource at `path` of `api`, answering any other method or path
 * under it with the API's 404 (after the resource's own routes, so a
 * stranger still gets 401 first).
 */
export function mountResource(api: Hono<GatewayEnv>, path: string, resource: Hono<GatewayEnv>): void {
  resource.all('*', noRoute);
  api.route(path, resource);
}

/**
 * What answers a path of `/api/v1` that no resource serves: the API's 404,
 * after the same access checks as a resource's, so that it too is counted
 * and carries the limit headers (a stranger gets 401). Mounted at `/api/v1`
 * after the API; not at `/v1`, where such a path is the gateway's.
 *
 * @example
 * app.route('/api/v1', unknownApiPaths(services, clientOf));
 */
export function unknownApiPaths(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const unknown = apiResource(deps, clientOf);
  unknown.all('*', noRoute);
  return unknown;
}

function noRoute(c: Context): never {
  throw new GatewayError('not_found', `There is no route ${c.req.method} ${c.req.path}.`);
}
