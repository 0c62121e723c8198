import type { MiddlewareHandler } from 'hono';
import { and, desc, eq, isNotNull } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { clusters, runs } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { describeError, type Logger } from '../../shared/http/log.js';

/** Headers that belong to one connection and are not passed on (RFC 9110, 7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

/**
 * The public URLs of applied runs (`https://<stack>.<cluster's public
 * domain>`) and where each goes (a node's address and the exposed port),
 * kept in this process and read again every `refreshMs` (and when a run of
 * this process ends), so a request whose Host is not one of them costs one
 * map lookup.
 *
 * @example
 * app.use(publicHosts.middleware());
 */
export class PublicHosts {
  private targets = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly refreshMs = 5_000,
  ) {}

  start(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reads the applied runs' public URLs again, of live clusters only; the newest run of a host wins. */
  async refresh(): Promise<void> {
    try {
      const rows = await this.db
        .select({ publicUrl: runs.publicUrl, webTarget: runs.webTarget })
        .from(runs)
        .innerJoin(clusters, eq(clusters.id, runs.clusterId))
        .where(and(eq(runs.state, 'APPLIED'), isNotNull(runs.publicUrl), isNotNull(runs.webTarget), eq(clusters.state, 'running')))
        .orderBy(desc(runs.finishedAt));
      const targets = new Map<string, string>();
      for (const row of rows) {
        const host = new URL(row.publicUrl!).hostname;
        if (!targets.has(host)) targets.set(host, row.webTarget!);
      }
      this.targets = targets;
    } catch (error) {
      this.log.warn('public URLs of runs could not be read', describeError(error));
    }
  }

  /** Whether `host` is a run's public host (a TLS terminator asks before it gets a certificate for a name). */
  serves(host: string): boolean {
    return this.targets.has(host.toLowerCase());
  }

  /** Sends requests for a run's public host to its node's port; every other request goes on to the gateway's routes. */
  middleware(): MiddlewareHandler {
    return async (c, next) => {
      if (this.targets.size === 0) return next();
      const host = c.req.header('host')?.replace(/:\d+$/, '').toLowerCase();
      const target = host ? this.targets.get(host) : undefined;
      if (!target) return next();
      const incoming = new URL(c.req.url);
      const headers = new Headers();
      for (const [name, value] of c.req.raw.headers) if (!HOP_BY_HOP.has(name)) headers.set(name, value);
      headers.set('x-forwarded-host', c.req.header('host')!);
      headers.set('x-forwarded-proto', 'https');
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
        return new Response(answer.body, { status: answer.status, headers: out });
      } catch {
        throw new GatewayError('upstream_error', 'The service behind this address did not answer.');
      }
    };
  }
}
