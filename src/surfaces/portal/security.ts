import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { csrf } from 'hono/csrf';
import { secureHeaders } from 'hono/secure-headers';
import { GatewayError } from '../../shared/http/errors.js';

/**
 * What every portal page is sent with, by Hono's `secureHeaders`: a strict
 * Content-Security-Policy (only our own files, and https images for stack
 * icons; no inline script or style, no frames, forms post only here), no
 * framing, no sniffing, no referrer leaving the site, and no caching of pages
 * that show an organization's data. Its other defaults are off so that the
 * portal sends what it sent before (HSTS belongs to the proxy that ends TLS).
 */
export function securityHeaders(): MiddlewareHandler {
  const headers = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'https:'],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    xFrameOptions: 'DENY',
    referrerPolicy: 'same-origin',
    crossOriginResourcePolicy: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    strictTransportSecurity: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
    removePoweredBy: false,
  });
  return async (c, next) => {
    await headers(c, next);
    if (!c.req.path.startsWith('/portal/assets/')) c.header('Cache-Control', 'no-store');
  };
}

/**
 * The form token of a session: an HMAC of the session's hash with a key
 * this process holds, so it is different for every session, cannot be
 * computed by another site, and needs no storage. Every portal form carries
 * it (`_csrf`), on top of the Origin check.
 *
 * @example
 * const tokens = formTokens(secret);
 * <input type="hidden" name="_csrf" value={tokens.of(sessionHash)} />
 */
export function formTokens(key: string) {
  const of = (sessionHash: string) => createHmac('sha256', key).update(`portal-form:${sessionHash}`).digest('base64url');
  return {
    of,
    check(sessionHash: string, presented: unknown): void {
      const expected = Buffer.from(of(sessionHash));
      const given = Buffer.from(typeof presented === 'string' ? presented : '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new GatewayError('forbidden', 'This form has expired or did not come from this portal. Reload the page and try again.');
      }
    },
  };
}

/**
 * Hono's `csrf` middleware: a form post is taken only when the browser says
 * it came from this portal (`Sec-Fetch-Site: same-origin`, or an `Origin`
 * equal to the portal's own: the scheme the browser used, which a trusted
 * proxy may have ended, and the host it asked for). Anything else is 403.
 */
export function sameOrigin(https: (c: Context) => boolean): MiddlewareHandler {
  return csrf({ origin: (origin, c) => origin === `${https(c) ? 'https' : 'http'}://${c.req.header('host') ?? ''}` });
}
