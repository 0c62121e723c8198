import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import proxyaddr from 'proxy-addr';

/**
 * The client's address and scheme: the socket's, or, when the socket is one
 * of the trusted proxies (`TOLLGATE_TRUSTED_PROXIES`), what they forwarded
 * (`X-Forwarded-For`, `X-Forwarded-Proto`), by proxy-addr's rules (the same
 * as Express's `trust proxy`). Anyone else's forwarding headers are ignored:
 * a client cannot pick its own address to dodge a limit.
 *
 * @example
 * const client = clientInfo(trustedProxies);
 * const { address, https } = client(c);
 */
export function clientInfo(trustedProxies: string[]): (c: Context) => { address: string; https: boolean } {
  const trust = proxyaddr.compile(trustedProxies);
  return (c) => {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (!incoming?.socket) return { address: 'unknown', https: new URL(c.req.url).protocol === 'https:' };
    const address = proxyaddr(incoming, trust);
    const socketAddress = incoming.socket.remoteAddress ?? '';
    const forwardedProto = c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase();
    const https = 'encrypted' in incoming.socket ? true : trust(socketAddress, 0) && forwardedProto === 'https';
    return { address, https };
  };
}
