import { Counter, Gauge, type Registry } from 'prom-client';

/** What the runner tells its metrics: each line's end, by how it ended. */
export interface BatchEvents {
  lineDone(status: 'done' | 'failed', count?: number): void;
}

/**
 * Batches' metrics (docs/observability.md): lines waiting (every replica's, read from the database
 * when Prometheus scrapes), lines this replica runs now, and lines ended, by status (`done`: the
 * engine's answer; `failed`: an error line).
 *
 * @example
 * const events = batchMetrics(metrics.registry, { waiting: () => lines.waiting(), running: () => runner.size });
 */
export function batchMetrics(
  registry: Registry,
  read: { waiting: () => Promise<number>; running: () => number },
): BatchEvents {
  const registers = [registry];
  new Gauge({
    name: 'tollgate_batch_lines_waiting',
    help: 'Lines of batches in progress waiting to run, on every replica (read from the database).',
    registers,
    async collect() {
      this.set(await read.waiting().catch(() => 0));
    },
  });
  new Gauge({
    name: 'tollgate_batch_lines_running',
    help: 'Lines of batches this replica runs now (at most TOLLGATE_BATCHES_CONCURRENCY).',
    registers,
    collect() {
      this.set(read.running());
    },
  });
  const done = new Counter({
    name: 'tollgate_batch_lines_done_total',
    help: 'Lines of batches this replica ended, by status: done (answered) or failed (an error line).',
    labelNames: ['status'] as const,
    registers,
  });
  return { lineDone: (status, count = 1) => done.inc({ status }, count) };
}
