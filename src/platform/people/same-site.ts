import type { Context } from 'hono';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request that changes something, sent with a session cookie,
 * came from a page of this gateway, as the browser reports it:
 * `Sec-Fetch-Site: same-origin`, or an `Origin` equal to the gateway's own
 * (the scheme the browser used, which a trusted proxy may have ended, and
 * the host it asked for). Browsers send one or both on every POST, PUT,
 * PATCH and DELETE, whatever the body and its Content-Type (a no-cors fetch
 * with a Blob body included), so a page elsewhere (another site, or another
 * origin of the same site, which a `SameSite=Lax` cookie does not stop) is
 * always caught. A request with neither header did not come from a browser
 * (curl, a script holding the cookie), which no other site can direct.
 * Reading requests (GET, HEAD, OPTIONS) are always allowed.
 * The gateway's one same-origin check: the portal's forms (`sameOrigin`),
 * the generic API's changes made with a session, and sign-out all use it.
 *
 * @example
 * if (!sessionRequestFromThisSite(c, clientOf(c).https)) throw new GatewayError('forbidden', '…');
 */
export function sessionRequestFromThisSite(c: Context, https: boolean): boolean {
  if (SAFE_METHODS.has(c.req.method)) return true;
  const site = c.req.header('sec-fetch-site');
  const origin = c.req.header('origin');
  if (site === undefined && origin === undefined) return true;
  return site === 'same-origin' || origin === `${https ? 'https' : 'http'}://${c.req.header('host') ?? ''}`;
}
