import type { MiddlewareHandler } from 'hono';
import type { PublicHosts } from '../../platform/runs/public-hosts.js';
import { GatewayError } from '../../shared/http/errors.js';
import { headerOf } from '../../shared/http/request.js';

/** Headers that belong to one connection and are not passed on (RFC 9110, 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
]);

/**
 * Sends a request for an applied run's public host (`https://<stack>.<cluster
 * domain>`) to its node's port; every other request goes on to the gateway's
 * routes, after one map lookup. A middleware, not a route: it answers any
 * path and method of those hosts, before the gateway's own routes.
 *
 * @example
 * app.use(runHostsProxy(services.publicHosts));
 */
export function runHostsProxy(publicHosts: PublicHosts): MiddlewareHandler {
  return async (c, next) => {
    // Every request of every surface passes here: the Host is read from Node's own headers, so that
    // a request for the gateway itself does not build web Headers for this lookup.
    const host = headerOf(c, 'host')?.replace(/:\d+$/, '');
    const target = host ? publicHosts.targetOf(host) : undefined;
    if (!target) return next();
    const incoming = new URL(c.req.url);
    const headers = new Headers();
    for (const [name, value] of c.req.raw.headers) if (!HOP_BY_HOP.has(name)) headers.set(name, value);
    headers.set('x-forwarded-host', c.req.header('host')!);
    headers.set('x-forwarded-proto', 'https');
    // fetch decodes the answer below, and Node 20's cannot decode zstd, which browsers offer: ask
    // only what it decodes.
    if (headers.has('accept-encoding')) headers.set('accept-encoding', 'gzip, deflate, br');
    try {
      const answer = await fetch(`http://${target}${incoming.pathname}${incoming.search}`, {
        method: c.req.method,
        headers,
        body: c.req.method === 'GET' || c.req.method === 'HEAD' ? undefined : c.req.raw.body,
        redirect: 'manual',
        signal: c.req.raw.signal,
        ...({ duplex: 'half' } as object),
      });
      const out = new Headers(answer.headers);
      for (const name of HOP_BY_HOP) out.delete(name);
      // fetch has decoded the body already.
      out.delete('content-encoding');
      out.delete('content-length');
      out.delete('set-cookie');
      for (const cookie of answer.headers.getSetCookie()) out.append('set-cookie', hostOnly(cookie));
      return new Response(answer.body, { status: answer.status, headers: out });
    } catch {
      throw new GatewayError('upstream_error', 'The service behind this address did not answer.');
    }
  };
}

/**
 * A node's `Set-Cookie` without its `Domain` attribute: the cookie is kept,
 * host-only, for the run's own host. With a Domain it would reach every host
 * under that domain (other organizations' stacks, or the portal when it shares
 * a parent domain), where it could sign a visitor in as someone else. A
 * cookie's value cannot hold `;` (RFC 6265, 4.1.1), so the attributes split
 * there.
 */
function hostOnly(cookie: string): string {
  const [pair, ...attributes] = cookie.split(';');
  return [pair, ...attributes.filter((attribute) => attribute.split('=')[0]!.trim().toLowerCase() !== 'domain')].join(
    ';',
  );
}
