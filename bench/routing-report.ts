// What `npm run bench:routing` (bench/routing.ts) prints: its table and the targets.
import type { Policy, Workload } from './routing-workloads.js';

export interface RunResult {
  replicas: number;
  workload: Workload;
  policy: Policy;
  /** In the simulated GPU's time (wall time / TIME_SCALE). */
  outputTokensPerSecond: number;
  ttftMeanS: number;
  ttftP99S: number;
  /**
   * The mixed workload's classes: agents' and RAG users' mean first token (null for the other
   * workloads).
   */
  agentsTtftMeanS: number | null;
  ragTtftMeanS: number | null;
  prefixHitRate: number;
  requests: number;
  /**
   * Requests sent in the window per replica, in replica order: a hot spot shows as one far above
   * the rest.
   */
  perReplica: number[];
  failed: number;
  /**
   * Scored choices made least-loaded because a replica's metrics were stale (a starved event loop
   * scrapes late).
   */
  fallbacks: number;
}

const seconds = (value: number | null): string => (value === null ? '-' : value.toFixed(2));

/** The results as a Markdown table, then each workload's targets. */
export function report(results: RunResult[]): string {
  const rows = [
    [
      'replicas',
      'workload',
      'policy',
      'output tok/s',
      'TTFT mean (s)',
      'TTFT p99 (s)',
      'agents TTFT (s)',
      'RAG TTFT (s)',
      'prefix hit rate',
      'requests',
      'per replica',
      'failed',
      'fallbacks',
    ],
  ];
  for (const r of results) {
    rows.push([
      String(r.replicas),
      r.workload,
      r.policy,
      r.outputTokensPerSecond.toFixed(0),
      r.ttftMeanS.toFixed(2),
      r.ttftP99S.toFixed(2),
      seconds(r.agentsTtftMeanS),
      seconds(r.ragTtftMeanS),
      `${(r.prefixHitRate * 100).toFixed(1)} %`,
      String(r.requests),
      r.perReplica.join('/'),
      String(r.failed),
      String(r.fallbacks),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]): string => `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(' | ')} |`;
  let out = `${line(rows[0]!)}\n| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |\n${rows.slice(1).map(line).join('\n')}\n\n`;
  for (const replicas of new Set(results.map((r) => r.replicas))) {
    const of = (workload: Workload, policy: Policy) =>
      results.find((r) => r.replicas === replicas && r.workload === workload && r.policy === policy);
    const ratio = (a: RunResult, b: RunResult) => (a.outputTokensPerSecond / b.outputTokensPerSecond).toFixed(2);
    const [rr, ll, scored] = [
      of('shared-prefix', 'round-robin'),
      of('shared-prefix', 'least-loaded'),
      of('shared-prefix', 'scored'),
    ];
    if (rr && ll && scored) {
      out +=
        `${replicas} replicas, shared prefix: scored/round-robin throughput ${ratio(scored, rr)}x (target >= 2), ` +
        `TTFT ${(scored.ttftMeanS / rr.ttftMeanS).toFixed(3)} of round-robin's (target <= 0.2), ` +
        `scored/least-loaded throughput ${ratio(scored, ll)}x (target >= 1.3)\n`;
    }
    const [ull, uscored] = [of('unrelated', 'least-loaded'), of('unrelated', 'scored')];
    if (ull && uscored) {
      out += `${replicas} replicas, unrelated: scored/least-loaded throughput ${(uscored.outputTokensPerSecond / ull.outputTokensPerSecond).toFixed(3)} (target within 0.95..1.05)\n`;
    }
    const [mrr, mscored] = [of('agents-rag', 'round-robin'), of('agents-rag', 'scored')];
    if (mscored?.agentsTtftMeanS != null && mscored.ragTtftMeanS) {
      out += `${replicas} replicas, agents + RAG: scored agents' TTFT mean / RAG's ${(mscored.agentsTtftMeanS / mscored.ragTtftMeanS).toFixed(2)} (target <= 2)`;
      if (mrr) {
        out +=
          `, scored/round-robin throughput ${ratio(mscored, mrr)}x (target >= 2), ` +
          `TTFT ${(mscored.ttftMeanS / mrr.ttftMeanS).toFixed(3)} of round-robin's (target <= 0.2)`;
      }
      out += '\n';
    }
  }
  return out;
}
