import { performance } from 'node:perf_hooks';
import { activityBetween, addActivity, addSpent, cpuBetween, processActivity, readCpu, type CpuProbe } from './cpu.js';
import { createAgent, runSlice, type Slice, type Target } from './load.js';
import { compare, type ScenarioCpu, type ScenarioResult } from './report.js';
import type { Scenario } from './scenarios.js';

const WARMUP_MS = 1000;

/**
 * One process measured on one scenario: its slices, each beside a slice of the same load sent to
 * `direct`.
 */
export interface Lane {
  /**
   * Whose result this is: 'gateway' (Tollgate) or a relay's name ('floor', 'portkey', 'rules
   * floor').
   */
  who: string;
  scenario: Scenario;
  /**
   * What the subject is compared against: the simulator, or a second gateway for a `--baseline`
   * other than direct.
   */
  direct: Target;
  subject: Target;
  /** The baseline's name in the result ('direct', 'limits-off', …). */
  baseline: string;
  /**
   * The direct side sends `scenario.direct`'s body (the chat request a translating gateway makes of
   * the engine).
   */
  directSendsEngineBody: boolean;
  /** CPU read around every slice; the one named 'subject' is the process measured. */
  probes: CpuProbe[];
}

export interface MeasureSettings {
  seconds: number;
  rounds: number;
}

/**
 * Warm-up, then rounds: in each round every lane runs a direct slice followed by its subject's
 * slice. Lanes measured together take their slices seconds apart, so a ratio between them (Tollgate
 * over the floor at the same bytes, a Messages request over the chat stream of its bytes) is not
 * moved by the machine's drift over a run; measured one after the other they were minutes apart,
 * and the machine moved more than the targets' margins. Every probe's CPU is read before and after
 * each measured slice (not during it), and summed per side.
 *
 * @example
 * const [gateway, floor] = await measureLanes([gatewayLane, floorLane], 8, { seconds: 3, rounds: 3 });
 */
export async function measureLanes(
  lanes: Lane[],
  concurrency: number,
  settings: MeasureSettings,
): Promise<ScenarioResult[]> {
  const runs = await Promise.all(lanes.map((lane) => laneRun(lane, concurrency, settings.seconds * 1000)));
  try {
    for (const run of runs) await run.warmUp();
    for (let round = 0; round < settings.rounds; round++) {
      for (const run of runs) await run.round();
    }
    // Off Linux nothing is read: no CPU figures rather than zeros.
    return runs.map((run) => (process.platform === 'linux' ? { ...run.result(), cpu: run.cpu } : run.result()));
  } finally {
    for (const run of runs) run.close();
  }
}

async function laneRun(lane: Lane, concurrency: number, durationMs: number) {
  const agents = { direct: createAgent(concurrency), gateway: createAgent(concurrency) };
  const sent = (lane.scenario.bodies ?? [lane.scenario.body]).map((body) => JSON.stringify(body));
  const bodies = {
    direct: lane.directSendsEngineBody ? [JSON.stringify(lane.scenario.direct!.body)] : sent,
    gateway: sent,
  };
  const targets = { direct: lane.direct, gateway: lane.subject };
  const slice = (side: 'direct' | 'gateway', ms: number) =>
    runSlice(targets[side], agents[side], {
      body: bodies[side],
      stream: lane.scenario.stream,
      concurrency,
      durationMs: ms,
    });
  const cpu: ScenarioCpu = { direct: { ns: {}, wallMs: 0 }, gateway: { ns: {}, wallMs: 0 } };
  const slices: Record<'direct' | 'gateway', Slice[]> = { direct: [], gateway: [] };
  const [subjectPid] = (await lane.probes.find((probe) => probe.name === 'subject')?.pids()) ?? [];
  const activityOfSubject = () => (subjectPid === undefined ? Promise.resolve(null) : processActivity(subjectPid));
  const measured = async (side: 'direct' | 'gateway') => {
    const before = await readCpu(lane.probes);
    const activityBefore = await activityOfSubject();
    const start = performance.now();
    slices[side].push(await slice(side, durationMs));
    cpu[side].wallMs += performance.now() - start;
    const activity = activityBetween(activityBefore, await activityOfSubject());
    addSpent(cpu[side].ns, cpuBetween(before, await readCpu(lane.probes)));
    if (side === 'gateway') cpu.subjectActivity = addActivity(cpu.subjectActivity, activity);
  };
  return {
    cpu,
    warmUp: async () => {
      await slice('direct', WARMUP_MS);
      await slice('gateway', WARMUP_MS);
    },
    round: async () => {
      await measured('direct');
      await measured('gateway');
    },
    result: () => compare(lane.scenario.name, concurrency, slices.direct, slices.gateway, lane.baseline),
    close: () => {
      agents.direct.destroy();
      agents.gateway.destroy();
    },
  };
}
