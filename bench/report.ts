import type { CpuSpent, ProcessActivity } from './cpu.js';
import type { Sample, Slice } from './load.js';

export interface Stats {
  requests: number;
  errors: number;
  /** Error count per HTTP status ("0" = no answer). */
  errorStatuses: Record<string, number>;
  /** Successful requests per second over the measured time. */
  rps: number;
  p50Ms: number | null;
  p99Ms: number | null;
  ttftP50Ms: number | null;
}

export interface Ratios {
  throughput: number | null;
  p50: number | null;
  p99: number | null;
  ttft: number | null;
}

export interface ScenarioResult {
  scenario: string;
  concurrency: number;
  /** What `direct` measured: the simulator itself, or a gateway with limits off (`--baseline`). */
  baseline: string;
  direct: Stats;
  gateway: Stats;
  /** gateway / direct. */
  ratios: Ratios;
  addedP50Ms: number | null;
  /** Throughput ratio of each round on its own, to show the noise. */
  roundThroughputRatios: (number | null)[];
  /**
   * CPU (from /proc) of the processes read, over the direct slices and over the gateway slices;
   * absent off Linux.
   */
  cpu?: ScenarioCpu;
}

/**
 * CPU in ns per probe, summed over a side's slices, with the wall time it was read over. Probes:
 * `subject` the process measured (Tollgate, Portkey or the floor relay), `baseline` what the direct
 * slices went to (the simulator, or a second gateway), `simulator`, and `redis` / `postgres` when
 * the bench uses them.
 */
export interface ScenarioCpu {
  direct: { ns: CpuSpent; wallMs: number };
  gateway: { ns: CpuSpent; wallMs: number };
  /**
   * The subject's system calls, thread runs and page faults over the gateway slices (null:
   * /proc/PID/io unreadable).
   */
  subjectActivity?: ProcessActivity | null;
}

/**
 * The subject's read and write system calls, thread runs and page faults per answered gateway
 * request; null when not read.
 *
 * @example
 * const perRequest = activityPerRequest(result); // { readCalls: 4.1, writeCalls: 3.2, threadRuns: 5.7, pageFaults: 0.4 }
 */
export function activityPerRequest(r: ScenarioResult): ProcessActivity | null {
  const activity = r.cpu?.subjectActivity;
  const answered = r.gateway.requests - r.gateway.errors;
  if (!activity || answered === 0) return null;
  return {
    readCalls: activity.readCalls / answered,
    writeCalls: activity.writeCalls / answered,
    threadRuns: activity.threadRuns / answered,
    pageFaults: activity.pageFaults / answered,
  };
}

/**
 * CPU per answered request in µs: of `probe` during the gateway slices (default), or the direct
 * ones.
 *
 * @example
 * const us = cpuPerRequestUs(result, 'subject'); // the gateway's own CPU per request
 */
export function cpuPerRequestUs(
  r: ScenarioResult,
  probe: string,
  side: 'direct' | 'gateway' = 'gateway',
): number | null {
  const ns = r.cpu?.[side].ns[probe];
  const answered = r[side].requests - r[side].errors;
  return ns === undefined || answered === 0 ? null : ns / 1000 / answered;
}

/**
 * What a probe would have spent per gateway request at the rate it ran while the load went direct:
 * the part of its CPU per request that is not the gateway's doing (other clients of a shared Redis
 * or PostgreSQL, their own timers).
 */
export function restingCpuPerRequestUs(r: ScenarioResult, probe: string): number | null {
  const cpu = r.cpu;
  const ns = cpu?.direct.ns[probe];
  const answered = r.gateway.requests - r.gateway.errors;
  if (!cpu || ns === undefined || answered === 0 || cpu.direct.wallMs === 0) return null;
  return (ns / 1000 / answered) * (cpu.gateway.wallMs / cpu.direct.wallMs);
}

/**
 * Pools the slices of all rounds: latencies from successful requests only
 * (fast errors would flatter them), throughput as successes per second.
 *
 * @example
 * const stats = summarize([slice1, slice2]);
 */
export function summarize(slices: Slice[]): Stats {
  const samples = slices.flatMap((slice) => slice.samples);
  const seconds = slices.reduce((sum, slice) => sum + slice.elapsedMs, 0) / 1000;
  const good = samples.filter((s) => s.ok);
  const errorStatuses: Record<string, number> = {};
  for (const s of samples) if (!s.ok) errorStatuses[s.status] = (errorStatuses[s.status] ?? 0) + 1;
  const latencies = sorted(good.map((s) => s.latencyMs));
  const ttfts = sorted(good.flatMap((s: Sample) => (s.ttftMs === undefined ? [] : [s.ttftMs])));
  return {
    requests: samples.length,
    errors: samples.length - good.length,
    errorStatuses,
    rps: seconds > 0 ? good.length / seconds : 0,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    ttftP50Ms: percentile(ttfts, 0.5),
  };
}

/**
 * Puts a scenario's direct and gateway numbers side by side.
 *
 * @example
 * const result = compare('chat-json', 32, directSlices, gatewaySlices);
 */
export function compare(
  scenario: string,
  concurrency: number,
  direct: Slice[],
  gateway: Slice[],
  baseline = 'direct',
): ScenarioResult {
  const d = summarize(direct);
  const g = summarize(gateway);
  return {
    scenario,
    concurrency,
    baseline,
    direct: d,
    gateway: g,
    ratios: {
      throughput: ratio(g.rps, d.rps),
      p50: ratio(g.p50Ms, d.p50Ms),
      p99: ratio(g.p99Ms, d.p99Ms),
      ttft: ratio(g.ttftP50Ms, d.ttftP50Ms),
    },
    addedP50Ms: g.p50Ms !== null && d.p50Ms !== null ? g.p50Ms - d.p50Ms : null,
    roundThroughputRatios: direct.map((slice, i) => {
      const other = gateway[i];
      return other ? ratio(summarize([other]).rps, summarize([slice]).rps) : null;
    }),
  };
}

/**
 * The text table for one scenario.
 *
 * @example
 * console.log(formatScenario(result));
 */
export function formatScenario(r: ScenarioResult): string {
  const head = ['', 'req/s', 'p50 ms', 'p99 ms', 'TTFT p50', 'CPU µs/req', 'errors'];
  const cpuDirect = cpuPerRequestUs(r, 'baseline', 'direct');
  const cpuGateway = cpuPerRequestUs(r, 'subject');
  const row = (label: string, s: Stats, cpu: number | null) => [
    label,
    num(s.rps),
    num(s.p50Ms),
    num(s.p99Ms),
    num(s.ttftP50Ms),
    us(cpu),
    errors(s),
  ];
  const ratios = [
    `gw/${r.baseline}`,
    times(r.ratios.throughput),
    times(r.ratios.p50),
    times(r.ratios.p99),
    times(r.ratios.ttft),
    times(ratio(cpuGateway, cpuDirect)),
    '',
  ];
  const rows = [head, row(r.baseline, r.direct, cpuDirect), row('gateway', r.gateway, cpuGateway), ratios];
  const widths = head.map((_, col) => Math.max(...rows.map((cells) => (cells[col] ?? '').length)));
  const lines = rows.map((cells) =>
    `  ${cells.map((cell, col) => (col === 0 ? cell.padEnd(widths[col] ?? 0) : cell.padStart(widths[col] ?? 0))).join('   ')}`.trimEnd(),
  );
  const added = r.addedP50Ms === null ? 'n/a' : `${r.addedP50Ms >= 0 ? '+' : ''}${r.addedP50Ms.toFixed(2)} ms`;
  const perRound = r.roundThroughputRatios.map(times).join(' ');
  const title = `${r.scenario} · ${r.concurrency} connection${r.concurrency === 1 ? '' : 's'}`;
  return [
    title,
    ...lines,
    `  added p50 latency: ${added}   throughput ratio per round: ${perRound}`,
    ...formatOthersCpu(r),
    ...formatActivity(r),
  ].join('\n');
}

/**
 * The CPU per gateway request of the other processes read (simulator, Redis, PostgreSQL), each with
 * its resting share.
 */
function formatOthersCpu(r: ScenarioResult): string[] {
  const others = Object.keys(r.cpu?.gateway.ns ?? {}).filter((probe) => probe !== 'subject' && probe !== 'baseline');
  if (others.length === 0) return [];
  const parts = others.map(
    (probe) => `${probe} ${us(cpuPerRequestUs(r, probe))} µs (${us(restingCpuPerRequestUs(r, probe))} at rest)`,
  );
  return [`  CPU per gateway request, other processes: ${parts.join(', ')}`];
}

/**
 * The subject's system calls, thread runs and page faults per request, the counts behind its CPU
 * time.
 */
function formatActivity(r: ScenarioResult): string[] {
  const perRequest = activityPerRequest(r);
  if (!perRequest) return [];
  const { readCalls, writeCalls, threadRuns, pageFaults } = perRequest;
  return [
    `  per gateway request: ${readCalls.toFixed(2)} read and ${writeCalls.toFixed(2)} write system calls, ${threadRuns.toFixed(2)} thread runs, ${pageFaults.toFixed(2)} page faults`,
  ];
}

function us(value: number | null): string {
  return value === null ? '–' : value.toFixed(0);
}

function sorted(values: number[]): number[] {
  return values.sort((a, b) => a - b);
}

/** Nearest-rank percentile of sorted values. */
export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  return values[Math.min(values.length - 1, Math.max(0, Math.ceil(p * values.length) - 1))] ?? null;
}

function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

function num(value: number | null): string {
  if (value === null) return '–';
  return value >= 100 ? value.toFixed(1) : value.toFixed(2);
}

function times(value: number | null): string {
  return value === null ? '–' : `${value.toFixed(3)}x`;
}

function errors(s: Stats): string {
  if (s.errors === 0) return '0';
  const detail = Object.entries(s.errorStatuses).map(
    ([status, count]) => `${count}×${status === '0' ? 'net' : status}`,
  );
  return `${s.errors} (${detail.join(', ')})`;
}

/**
 * One line per scenario and concurrency: CPU per request of Tollgate, the floor relay, Portkey and
 * the rules floor (each process's own), their throughput and added p50 (time to first token for
 * streams), Redis's and PostgreSQL's CPU per Tollgate request (and Redis's per rules floor
 * request), and each process's write system calls and thread runs per request. Runs without the
 * floor, Portkey or the rules floor show '–' in their place.
 *
 * @example
 * console.log(formatCpuSummary(results, floorResults, portkeyResults, rulesFloorResults));
 */
export function formatCpuSummary(
  tollgate: ScenarioResult[],
  floor: ScenarioResult[],
  portkey: ScenarioResult[],
  rulesFloor: ScenarioResult[] = [],
): string {
  const find = (list: ScenarioResult[], r: ScenarioResult) =>
    list.find((o) => o.scenario === r.scenario && o.concurrency === r.concurrency);
  const added = (r: ScenarioResult | undefined) => {
    if (!r) return null;
    const ttft =
      r.gateway.ttftP50Ms !== null && r.direct.ttftP50Ms !== null ? r.gateway.ttftP50Ms - r.direct.ttftP50Ms : null;
    return ttft ?? r.addedP50Ms;
  };
  const rows = tollgate.map((r) => {
    const rules = find(rulesFloor, r);
    const all = [r, find(floor, r), find(portkey, r), rules];
    const cpu = all.map((o) => us(o ? cpuPerRequestUs(o, 'subject') : null)).join(' / ');
    const rps = all.map((o) => (o ? o.gateway.rps.toFixed(0) : '–')).join(' / ');
    const p50 = all.map((o) => (added(o) === null ? '–' : (added(o) as number).toFixed(2))).join(' / ');
    const versus = all[2] ? `   Tollgate ÷ Portkey throughput ${times(ratio(r.gateway.rps, all[2].gateway.rps))}` : '';
    const others = ['redis', 'postgres'].filter((probe) => r.cpu?.gateway.ns[probe] !== undefined);
    const rulesRedis =
      rules?.cpu?.gateway.ns.redis !== undefined
        ? ` (rules floor + redis ${us(cpuPerRequestUs(rules, 'redis'))} µs)`
        : '';
    const extra =
      others.length > 0
        ? `   + ${others.map((probe) => `${probe} ${us(cpuPerRequestUs(r, probe))} µs`).join(', ')}${rulesRedis}`
        : '';
    const what = r.scenario.endsWith('-stream') ? 'added TTFT' : 'added p50';
    const count = (o: ScenarioResult | undefined, field: keyof ProcessActivity) => {
      const perRequest = o ? activityPerRequest(o) : null;
      return perRequest ? perRequest[field].toFixed(1) : '–';
    };
    const calls = `   writes ${all.map((o) => count(o, 'writeCalls')).join(' / ')}, thread runs ${all.map((o) => count(o, 'threadRuns')).join(' / ')}, page faults ${all.map((o) => count(o, 'pageFaults')).join(' / ')} per req`;
    return `  ${`${r.scenario} × ${r.concurrency}`.padEnd(17)} CPU ${cpu} µs/req   ${rps} req/s   ${what} ${p50} ms${versus}${extra}${calls}`;
  });
  return [
    'CPU per request (each process its own, user + system from /proc) · throughput · added latency: Tollgate / floor / Portkey / rules floor',
    ...rows,
  ].join('\n');
}
