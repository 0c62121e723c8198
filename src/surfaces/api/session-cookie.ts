import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';

/** The session cookie's name, after its prefix. */
const SESSION_COOKIE = 'tollgate_session';

/**
 * The portal's session cookie is host-only: no Domain, `Path=/`, so no other
 * host (a stack's public URL under a parent domain included) shares it. Over
 * HTTPS it is `__Host-tollgate_session`, which the browser takes only from
 * this host, Secure, with no Domain: a cookie of that name set for a parent
 * domain by another host is refused by the browser itself, so it can never
 * stand in for ours (login CSRF). Browsers refuse the prefix without Secure,
 * so over plain HTTP (the demo on loopback) it is `tollgate_session`, still
 * host-only; only the name of the request's own scheme is read.
 *
 * @example
 * setSessionCookie(c, session.id, session.expiresAt, clientOf(c).https);
 */
export function sessionCookieOf(c: Context, https: boolean): string | undefined {
  return getCookie(c, SESSION_COOKIE, https ? 'host' : undefined);
}

/** Sets the session cookie: HttpOnly, SameSite=Lax, host-only, and `__Host-` and Secure over HTTPS. */
export function setSessionCookie(c: Context, sessionId: string, expires: Date, https: boolean): void {
  setCookie(c, SESSION_COOKIE, sessionId, {
    path: '/',
    httpOnly: true,
    sameSite: 'Lax',
    secure: https,
    expires,
    prefix: https ? 'host' : undefined,
  });
}

/** Clears the session cookie (its name of this scheme). */
export function clearSessionCookie(c: Context, https: boolean): void {
  deleteCookie(c, SESSION_COOKIE, {
    path: '/',
    httpOnly: true,
    sameSite: 'Lax',
    secure: https,
    prefix: https ? 'host' : undefined,
  });
}
