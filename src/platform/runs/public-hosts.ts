import { and, desc, eq, isNotNull } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { clusters, runs } from '../../shared/db/schema.js';
import { describeError, type Logger } from '../../shared/http/log.js';

/**
 * The public URLs of applied runs (`https://<stack>.<cluster's public
 * domain>`) and where each goes (a node's address and the exposed port),
 * kept in this process and read again every `refreshMs` (and when a run of
 * this process ends), so a request whose Host is not one of them costs one
 * map lookup. The HTTP side is `surfaces/edge/`: the proxy to the nodes and
 * `/tls/allowed`.
 *
 * @example
 * const target = publicHosts.targetOf('grafana.train.example.com'); // '10.0.0.5:3000'
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

  /** Where a run's public host goes (a node's address and port), or undefined for any other host. */
  targetOf(host: string): string | undefined {
    return this.targets.get(host.toLowerCase());
  }
}
