import { and, desc, eq, isNotNull } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { clusters, runs } from '../../shared/db/schema.js';
import { describeError, type Logger } from '../../shared/http/log.js';

/**
 * The public URLs of applied runs (`https://<stack>.<cluster's public
 * domain>`) and where each goes (a node's address and the exposed port),
 * kept in this process and read again every `refreshMs` (and when a run of
 * this process ends, or a cluster is deleted here), so a request whose Host
 * is not one of them costs one map lookup. Reads may overlap; only the one
 * started last that has finished counts, so a slow read started before a
 * cluster was deleted never brings its hosts back. The HTTP side is
 * `surfaces/edge/`: the proxy to the nodes and `/tls/allowed`.
 *
 * @example
 * const target = publicHosts.targetOf('grafana.train.example.com'); // '10.0.0.5:3000'
 */
export class PublicHosts {
  private targets = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  /** How many reads have started, and the number of the newest one applied. */
  private started = 0;
  private applied = 0;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    private readonly options: {
      refreshMs?: number;
      /**
       * What a refresh reads (host → `address:port`); the store's applied runs unless a test gives
       * its own.
       */
      read?: () => Promise<Map<string, string>>;
    } = {},
  ) {}

  start(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 5_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Reads the applied runs' public URLs again, of live clusters only; kept unless a read started
   * later was kept first.
   */
  async refresh(): Promise<void> {
    const generation = ++this.started;
    try {
      const targets = await (this.options.read ?? (() => this.read()))();
      if (generation < this.applied) return;
      this.applied = generation;
      this.targets = targets;
    } catch (error) {
      this.log.warn('public URLs of runs could not be read', describeError(error));
    }
  }

  /** The newest applied run of each public host of a live cluster, and where it goes. */
  private async read(): Promise<Map<string, string>> {
    const rows = await this.db
      .select({ publicUrl: runs.publicUrl, webTarget: runs.webTarget })
      .from(runs)
      .innerJoin(clusters, eq(clusters.id, runs.clusterId))
      .where(
        and(
          eq(runs.state, 'APPLIED'),
          isNotNull(runs.publicUrl),
          isNotNull(runs.webTarget),
          eq(clusters.state, 'running'),
        ),
      )
      .orderBy(desc(runs.finishedAt));
    const targets = new Map<string, string>();
    for (const row of rows) {
      const host = new URL(row.publicUrl!).hostname;
      if (!targets.has(host)) targets.set(host, row.webTarget!);
    }
    return targets;
  }

  /**
   * Whether `host` is a run's public host (a TLS terminator asks before it gets a certificate for a
   * name).
   */
  serves(host: string): boolean {
    return this.targets.has(host.toLowerCase());
  }

  /** Where a run's public host goes (a node's address and port), or undefined for any other host. */
  targetOf(host: string): string | undefined {
    return this.targets.get(host.toLowerCase());
  }
}
