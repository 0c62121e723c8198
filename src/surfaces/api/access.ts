import type { Context, MiddlewareHandler } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { sessionRequestFromThisSite } from '../../platform/people/same-site.js';
import type { UserRow } from '../../platform/people/users.js';
import type { ApiDeps } from './deps.js';
import type { WindowCount } from '../../shared/db/window-counter.js';
import { sessionCookieOf } from './session-cookie.js';

/**
 * The spec's limits of the generic API: per authenticated caller, and per client address without
 * credentials.
 */
const HOURLY_LIMIT = 1_000;
export const ANONYMOUS_HOURLY_LIMIT = 100;
const HOUR_MS = 3_600_000;

/**
 * Who is calling the generic API, and the spec's hourly limits. A caller
 * proves who they are with `Authorization: Bearer <API key>` (the key acts
 * as the user who owns it) or with the portal's session cookie. Each
 * authenticated caller (a key, or a user's sessions together) may make 1,000
 * requests an hour; a client address without valid credentials, 100. Every
 * answer carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 * `X-RateLimit-Reset` (seconds until the window ends, as on /v1); a 429
 * `RATE_LIMITED` carries `Retry-After`. A key that acts as nobody (403) is
 * counted against the address, as a request without credentials is. A
 * change sent with a session cookie from a page elsewhere is 403
 * (`people/same-site.ts`), whatever its body.
 *
 * @example
 * api.use('*', apiAccess(deps, clientOf));
 */
export function apiAccess(
  deps: ApiDeps,
  clientOf: (c: Context) => { address: string; https: boolean },
): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    let actor: SignedInActor;
    try {
      actor = await signedInActor(deps, c, clientOf(c).https);
    } catch (error) {
      if (!(error instanceof GatewayError) || !NOBODY_CODES.has(error.code)) throw error;
      await countAgainst(deps, c, `api:addr:${clientOf(c).address}`, ANONYMOUS_HOURLY_LIMIT);
      throw error;
    }
    await countAgainst(deps, c, actor.keyId ? `api:key:${actor.keyId}` : `api:user:${actor.userId}`, HOURLY_LIMIT);
    if (actor.sessionHash !== undefined && !sessionRequestFromThisSite(c, clientOf(c).https)) {
      throw new GatewayError('forbidden', 'A change made with a session must come from this site.');
    }
    c.set('actor', actor);
    await next();
  };
}

/**
 * What `signedInActor` throws for a caller who is nobody: no or bad credentials, an ended session,
 * a key that acts as no user.
 */
const NOBODY_CODES: ReadonlySet<string> = new Set(['unauthorized', 'forbidden']);

/** Counts one request under `key`; sets the limit headers, and refuses with 429 past `limit`. */
export async function countAgainst(
  deps: Pick<ApiDeps, 'windowCounter'>,
  c: Context,
  key: string,
  limit: number,
): Promise<WindowCount> {
  const window = await deps.windowCounter.hit(key, HOUR_MS).catch((error: unknown) => {
    throw new GatewayError('limits_unavailable', 'The rate-limit store cannot be reached right now. Retry shortly.', {
      headers: { 'Retry-After': '2' },
      cause: error,
    });
  });
  const resetSeconds = String(Math.max(1, Math.ceil(window.resetMs / 1000)));
  c.header('X-RateLimit-Limit', String(limit));
  c.header('X-RateLimit-Remaining', String(Math.max(0, limit - window.count)));
  c.header('X-RateLimit-Reset', resetSeconds);
  if (window.count > limit) {
    throw new GatewayError('rate_limit_exceeded', `At most ${limit} requests an hour. Retry after the window resets.`, {
      headers: { 'Retry-After': resetSeconds },
    });
  }
  return window;
}

/**
 * The user behind the request's API key or session cookie; 401 `unauthorized` when there is none,
 * or it is not valid.
 */
async function signedInActor(deps: ApiDeps, c: Context, https: boolean): Promise<SignedInActor> {
  const authorization = c.req.header('authorization');
  if (authorization !== undefined) {
    const key = await deps.keys.authenticate(authorization);
    if (key.userId === null)
      throw new GatewayError(
        'forbidden',
        'This API key acts as no user (it was made before its organization had one); create a key for a user.',
      );
    // A key whose user was deleted is no longer valid; any other failure (the store unreachable)
    // stays what it is.
    const user = await deps.users.get(key.userId).catch((error: unknown) => {
      if (error instanceof GatewayError && error.code === 'not_found') {
        throw new GatewayError('unauthorized', 'Invalid API key.');
      }
      throw error;
    });
    return { ...actorOf(user), keyId: key.id };
  }
  const sessionId = sessionCookieOf(c, https);
  if (sessionId) {
    const session = await deps.sessions.user(sessionId);
    if (session) return { ...actorOf(session.user), sessionHash: session.sessionHash };
    throw new GatewayError('unauthorized', 'Your session has ended. Sign in again.');
  }
  throw new GatewayError('unauthorized', 'Send an API key as "Authorization: Bearer <key>", or sign in.');
}

function actorOf(user: UserRow): SignedInActor {
  return { userId: user.id, orgId: user.orgId, role: user.role, platformAdmin: user.platformAdmin, user };
}
