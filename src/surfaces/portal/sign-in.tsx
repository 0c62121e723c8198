import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { PASSWORD_MAX } from '../../platform/people/passwords.js';
import { ANONYMOUS_HOURLY_LIMIT, countAgainst } from '../api/access.js';
import type { ClientOf } from '../api/resource.js';
import { checkSignIn, endSession, startSession } from '../auth/index.js';
import { SignInPage } from './sign-in-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

/**
 * The sign-in form (`/portal/sign-in`): counted against the client's address
 * like any anonymous API call, then the same checks and lockout as
 * `POST /auth/sign-in`.
 *
 * @example
 * portal.route('/sign-in', signInRoutes(deps, clientOf));
 */
export function signInRoutes(deps: PortalDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const signIn = new Hono<GatewayEnv>();
  signIn.get('/', (c) => c.html(<SignInPage />));
  signIn.post('/', async (c) => {
    const client = clientOf(c);
    await countAgainst(deps, c, `api:addr:${client.address}`, ANONYMOUS_HOURLY_LIMIT);
    const form = await c.req.parseBody();
    const email = typeof form.email === 'string' ? form.email.trim().slice(0, 254) : '';
    const password = typeof form.password === 'string' ? form.password : '';
    // No password is longer: refused before any hashing (never cut to length, which would let a
    // longer one in).
    if (password.length > PASSWORD_MAX)
      return c.html(<SignInPage error={`Passwords are at most ${PASSWORD_MAX} characters.`} email={email} />, 400);
    try {
      const user = await checkSignIn(deps, email, password, client.address);
      await startSession(c, deps, user.id, client.https);
      return c.redirect('/portal/overview', 303);
    } catch (error) {
      if (!(error instanceof GatewayError) || (error.status !== 401 && error.status !== 429)) throw error;
      return c.html(<SignInPage error={error.message} email={email} />, error.status as 401);
    }
  });
  return signIn;
}

/**
 * Signing out (`POST /portal/sign-out`, with the form token): the session ends everywhere.
 *
 * @example
 * portal.route('/sign-out', signOutRoutes(deps, session, clientOf));
 */
export function signOutRoutes(deps: PortalDeps, session: PortalSession, clientOf: ClientOf): Hono<GatewayEnv> {
  const signOut = new Hono<GatewayEnv>();
  signOut.post('/', async (c) => {
    const actor = await session.signedIn(c);
    session.checkToken(actor, (await c.req.parseBody())._csrf);
    await endSession(c, deps, clientOf(c).https);
    return c.redirect('/portal/sign-in', 303);
  });
  return signOut;
}
