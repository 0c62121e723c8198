import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { ANONYMOUS_HOURLY_LIMIT, countAgainst } from '../api/access.js';
import { clearSessionCookie, sessionCookieOf, setSessionCookie } from '../api/session-cookie.js';
import { renderApiError } from '../api/errors.js';
import { userView } from '../api/users.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES, requireJsonBody } from '../../shared/http/request.js';
import { refuseNul } from '../../shared/http/refuse-nul.js';
import { readBody } from '../../shared/http/validate.js';
import type { AuthDeps } from './deps.js';
import { EMAIL_MAX, normalizeEmail } from '../../platform/people/email.js';
import { PASSWORD_MAX } from '../../platform/people/passwords.js';
import { sessionRequestFromThisSite } from '../../platform/people/same-site.js';
import type { UserRow } from '../../platform/people/users.js';

/** Failed sign-ins allowed per email, and per client address, in a window of FAILURE_WINDOW_MS. */
const FAILURES_PER_EMAIL = 5;
const FAILURES_PER_ADDRESS = 20;
const FAILURE_WINDOW_MS = 15 * 60_000;

const signInBody = z.strictObject({
  email: z.string().trim().min(1).max(EMAIL_MAX),
  password: z.string().min(1).max(PASSWORD_MAX),
});

/**
 * Portal sign-in: `POST /auth/sign-in` (JSON `{email, password}`) sets the
 * session cookie; `POST /auth/sign-out` ends the session. A wrong password
 * and an unknown email get the same answer after the same work (a password
 * hash is checked either way). Failed sign-ins are limited per email and
 * per client address (FAILURES_PER_EMAIL, FAILURES_PER_ADDRESS in 15
 * minutes; known or unknown email alike), on top of the generic API's 100
 * requests an hour per address without credentials.
 *
 * @example
 * app.route('/auth', createAuthRoutes(services, clientOf));
 */
export function createAuthRoutes(
  deps: AuthDeps,
  clientOf: (c: Context) => { address: string; https: boolean },
): Hono<GatewayEnv> {
  const auth = new Hono<GatewayEnv>();
  auth.onError((error, c) => renderApiError(error, c, deps.log));
  auth.use('*', refuseNul(), limitBody(MANAGEMENT_MAX_BODY_BYTES, deps.config.oversizeDrain), requireJsonBody());

  auth.post('/sign-in', async (c) => {
    const client = clientOf(c);
    await countAgainst(deps, c, `api:addr:${client.address}`, ANONYMOUS_HOURLY_LIMIT);
    const { email, password } = await readBody(c, signInBody);
    const user = await checkSignIn(deps, email, password, client.address);
    await startSession(c, deps, user.id, client.https);
    return c.json({ user: userView(user) });
  });

  auth.post('/sign-out', async (c) => {
    // Another site could otherwise sign its visitors out.
    if (!sessionRequestFromThisSite(c, clientOf(c).https))
      throw new GatewayError('forbidden', 'Sign out from this site.');
    await endSession(c, deps, clientOf(c).https);
    return c.body(null, 204);
  });
  auth.all('*', (c) => {
    throw new GatewayError('not_found', `There is no route ${c.req.method} ${c.req.path}.`);
  });
  return auth;
}

/**
 * Checks an email and password, with the failed-sign-in limits: the user, or
 * 401 `unauthorized` (the same for an unknown email, after the same work), or
 * 429 once the email or the address has failed too often. Shared by the JSON
 * sign-in and the portal's form.
 */
export async function checkSignIn(deps: AuthDeps, email: string, password: string, address: string): Promise<UserRow> {
  // The counter and the lookup take the same normalized email: no other spelling of it has a fresh
  // count.
  const normalized = normalizeEmail(email);
  const counters = [`signin:email:${normalized}`, `signin:addr:${address}`];
  const [byEmail, byAddress] = await Promise.all(
    counters.map((key) => deps.windowCounter.peek(key, FAILURE_WINDOW_MS)),
  );
  for (const [count, limit] of [
    [byEmail!, FAILURES_PER_EMAIL],
    [byAddress!, FAILURES_PER_ADDRESS],
  ] as const) {
    if (count.count >= limit) {
      throw new GatewayError('rate_limit_exceeded', 'Too many failed sign-ins. Wait and try again.', {
        headers: { 'Retry-After': String(Math.max(1, Math.ceil(count.resetMs / 1000))) },
      });
    }
  }
  const user = await deps.users.findByEmail(normalized);
  const valid = user
    ? await deps.passwords.verify(password, user.passwordHash)
    : await deps.passwords.verifyNobody(password);
  if (!user || !valid) {
    await Promise.all(counters.map((key) => deps.windowCounter.hit(key, FAILURE_WINDOW_MS)));
    throw new GatewayError('unauthorized', 'The email or the password is wrong.');
  }
  if (deps.passwords.needsRehash(user.passwordHash)) await deps.users.rehash(user.id, password);
  return user;
}

/**
 * Starts a session for `userId` and sets its cookie: host-only, HttpOnly, SameSite=Lax, `__Host-`
 * and Secure over HTTPS.
 */
export async function startSession(c: Context, deps: AuthDeps, userId: string, https: boolean): Promise<void> {
  const session = await deps.sessions.start(userId);
  setSessionCookie(c, session.id, session.expiresAt, https);
}

/** Ends the request's session, if any, and clears its cookie. */
export async function endSession(c: Context, deps: AuthDeps, https: boolean): Promise<void> {
  const id = sessionCookieOf(c, https);
  if (id) await deps.sessions.end(id);
  clearSessionCookie(c, https);
}
