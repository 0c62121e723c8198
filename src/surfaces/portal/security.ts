import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { secureHeaders } from 'hono/secure-headers';
import { GatewayError } from '../../shared/http/errors.js';
import { sessionRequestFromThisSite } from '../../platform/people/same-site.js';

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
  const of = (sessionHash: string) =>
    createHmac('sha256', key).update(`portal-form:${sessionHash}`).digest('base64url');
  return {
    of,
    check(sessionHash: string, presented: unknown): void {
      const expected = Buffer.from(of(sessionHash));
      const given = Buffer.from(typeof presented === 'string' ? presented : '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new GatewayError(
          'forbidden',
          'This form has expired or did not come from this portal. Reload the page and try again.',
        );
      }
    },
  };
}

/** What a portal request only reads: never refused for where it came from. */
const READING_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A form post, or any other change, is taken only when the browser says it
 * came from this portal: the gateway's one same-origin check
 * (`people/same-site.ts`), also used by the generic API and sign-out. Anything
 * else is 403, and so is a change with neither `Sec-Fetch-Site` nor `Origin`:
 * every browser this portal serves sends one of them on a form post (OWASP's
 * advice, and what `hono/csrf` did here before), so a post without both is a
 * program holding a session cookie, which has the generic API (`/api`, with a
 * key) for changes. The generic API and sign-out still take a request with
 * neither header: they take keys, and programs use them.
 */
export function sameOrigin(https: (c: Context) => boolean): MiddlewareHandler {
  return async (c, next) => {
    const unsaid =
      !READING_METHODS.has(c.req.method) &&
      c.req.header('sec-fetch-site') === undefined &&
      c.req.header('origin') === undefined;
    // The portal's error handler shows this exception as "This form did not come from this portal."
    if (unsaid || !sessionRequestFromThisSite(c, https(c))) throw new HTTPException(403);
    await next();
  };
}
