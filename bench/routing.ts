// npm run bench:routing [-- --replicas 4,8 --workloads shared-prefix,unrelated,agents-rag --seconds
// 10 --warmup 4
//   --users 48 --time-scale 0.5 --prefix-weight 4 --out /tmp/routing.jsonl]
//
// Routing across replicas of a loaded vLLM: real simulator processes (the
// loaded model, time-scaled) on 127.0.0.1, driven through the Docker
// engine's own replica choice (`acquireReplica` and `startRouting` from
// src/gateway/engines/docker/routing.ts, with the same scraper and router
// the gateway runs), in this process: the bench sends each request straight
// to the replica chosen, so the gateway's HTTP path (the same for every
// policy) is not measured. Per replica count and workload, each policy gets
// fresh replicas (cold caches) and the same closed-loop clients.
import http from 'node:http';
import { appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { acquireReplica, startRouting } from '../src/gateway/engines/docker/routing.js';
import type { EngineState, Replica } from '../src/gateway/engines/docker/state.js';
import type { RoutingSettings } from '../src/config/index.js';
import { parsePromText } from '../src/gateway/engines/routing/prom-text.js';
import { createLogger } from '../src/shared/http/log.js';
import { type Child, freePort, startBuilt, waitForHealth } from './processes.js';
import { report, type RunResult } from './routing-report.js';
import {
  DEFAULT_TIME_SCALE,
  type Policy,
  simFlags,
  THINK_MEAN_S,
  type Workload,
  conversation,
} from './routing-workloads.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const MODEL = 'bench-8b';

const { values } = parseArgs({
  options: {
    replicas: { type: 'string', default: '4,8' },
    seconds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '4' },
    users: { type: 'string', default: '48' },
    workloads: { type: 'string', default: 'shared-prefix,unrelated,agents-rag' },
    // Each result appended to this file as it comes (one JSON a line, with the load average): a
    // killed run keeps them.
    out: { type: 'string' },
    policies: { type: 'string', default: 'round-robin,least-loaded,scored' },
    'time-scale': { type: 'string', default: String(DEFAULT_TIME_SCALE) },
    // The scored policy's weights; the defaults are the gateway's (TOLLGATE_ROUTING_*_WEIGHT).
    'queue-weight': { type: 'string', default: '1' },
    'kv-weight': { type: 'string', default: '1' },
    'prefix-weight': { type: 'string', default: '4' },
    'affinity-slack': { type: 'string', default: '2' },
    'affinity-slack-share': { type: 'string', default: '0.5' },
  },
});
const TIME_SCALE = Number(values['time-scale']);
const SIM_FLAGS = simFlags(TIME_SCALE);
const replicaCounts = values.replicas.split(',').map(Number);
const measureMs = Number(values.seconds) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const usersPerReplica = Number(values.users);

/** The gateway's defaults (src/config/settings.ts), with the policy under test. */
function settings(policy: Policy): RoutingSettings {
  return {
    policy,
    scrapeMs: 250,
    queueWeight: Number(values['queue-weight']),
    kvWeight: Number(values['kv-weight']),
    prefixWeight: Number(values['prefix-weight']),
    sessionWeight: 0.5,
    prefixBlockChars: 64,
    prefixEntries: 50_000,
    prefixTtlMs: 600_000,
    affinitySlack: Number(values['affinity-slack']),
    affinitySlackShare: Number(values['affinity-slack-share']),
  };
}

async function startReplicas(count: number): Promise<{ children: Child[]; urls: string[] }> {
  const children: Child[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    const port = await freePort();
    const child = startBuilt(`sim-${i}`, 'dist/sim/main.js', [MODEL, '--port', String(port), ...SIM_FLAGS], {
      cwd: ROOT,
      env: process.env,
    });
    children.push(child);
    urls.push(`http://127.0.0.1:${port}`);
  }
  await Promise.all(children.map((child, i) => waitForHealth(child, `${urls[i]}/health`)));
  return { children, urls };
}

/**
 * An engine state as the Docker engine keeps it, over already running replicas: what acquireReplica
 * reads.
 */
function engineOver(urls: string[], policy: Policy): EngineState {
  const replicas = new Map<number, Replica>(
    urls.map((url, index) => [
      index,
      {
        index,
        containerId: `sim-${index}`,
        name: `sim-${index}`,
        spec: '',
        url,
        state: 'ready',
        startedAt: Date.now(),
        inFlight: 0,
        served: 0,
        failures: 0,
        host: 'local',
        gpus: [],
      },
    ]),
  );
  const state = {
    // The replicas' own flags, as a Docker engine's definition gives them: its batch size
    // (--max-num-seqs) is read there.
    definition: { model: MODEL, served_model_name: MODEL, args: SIM_FLAGS },
    // Least-loaded is today's choice: the engine without routing settings.
    options: { log: createLogger('warn'), routing: policy === 'least-loaded' ? undefined : settings(policy) },
    replicas,
    rotation: 0,
  } as unknown as EngineState;
  startRouting(state);
  return state;
}

/** Sums a counter over every replica's /metrics. */
async function counterSum(urls: string[], name: string): Promise<number> {
  const texts = await Promise.all(urls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  return texts.flatMap((text) => parsePromText(text)).reduce((sum, s) => (s.name === name ? sum + s.value : sum), 0);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A seeded PRNG (mulberry32) for think times: the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

/**
 * One streamed chat request: resolves with its time to first token (ms) and output tokens, or null
 * on failure.
 */
function streamChat(
  url: string,
  messages: Array<{ role: string; content: string }>,
  maxTokens: number,
): Promise<{ ttftMs: number; tokens: number } | null> {
  const body = JSON.stringify({
    model: MODEL,
    messages,
    max_tokens: maxTokens,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(
      `${url}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          res.on('end', () => resolve(null));
          return;
        }
        let first: number | null = null;
        let tail = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          // The first chunk names the role (empty content) and comes with the first token.
          first ??= performance.now() - started;
          tail = (tail + chunk).slice(-400);
        });
        res.on('end', () => {
          const match = /"completion_tokens":(\d+)/.exec(tail);
          resolve(first === null || !match ? null : { ttftMs: first, tokens: Number(match[1]) });
        });
        res.on('error', () => resolve(null));
      },
    );
    req.on('error', () => resolve(null));
    req.end(body);
  });
}

async function runOnce(replicaCount: number, workload: Workload, policy: Policy): Promise<RunResult> {
  const { children, urls } = await startReplicas(replicaCount);
  const state = engineOver(urls, policy);
  const users = usersPerReplica * replicaCount;
  const started = performance.now();
  const measureFrom = started + warmupMs;
  const stopAt = measureFrom + measureMs;
  const ttfts: number[] = [];
  const classTtfts = { agent: [] as number[], rag: [] as number[], user: [] as number[] };
  const perReplica = urls.map(() => 0);
  let requests = 0;
  let failed = 0;
  let fallbacks = 0;
  // The replicas' counters at the start and the end of the measured window: steady state, without
  // warm-up or drain.
  const counters = async () => {
    const [tokens, hits, queries] = await Promise.all(
      ['vllm:generation_tokens_total', 'vllm:prefix_cache_hits_total', 'vllm:prefix_cache_queries_total'].map((name) =>
        counterSum(urls, name),
      ),
    );
    return { tokens: tokens!, hits: hits!, queries: queries!, at: performance.now() };
  };
  const sample = (at: number) =>
    new Promise<Awaited<ReturnType<typeof counters>>>((resolve) =>
      setTimeout(() => resolve(counters()), at - performance.now()),
    );
  const window = Promise.all([sample(measureFrom), sample(stopAt)]);

  const user = async (index: number): Promise<void> => {
    const next = seeded(index + 1);
    for (let n = 0; performance.now() < stopAt; n++) {
      for (const turn of conversation(workload, index, n)) {
        await sleep(-Math.log(1 - next()) * THINK_MEAN_S * 1000 * TIME_SCALE);
        if (performance.now() >= stopAt) return;
        const target = acquireReplica(state, undefined, { body: { messages: turn.messages, user: `user-${index}` } })!;
        if (target.routing?.policy === 'least-loaded-fallback' && performance.now() >= measureFrom) fallbacks++;
        const sentAt = performance.now();
        const answer = await streamChat(target.baseUrl.replace(/\/v1$/, ''), turn.messages, turn.maxTokens);
        target.release();
        if (sentAt < measureFrom) continue;
        requests++;
        perReplica[Number(target.replicaId.split('/').pop())]! += 1;
        // Every request sent in the window counts, however long it waited: leaving out the slow
        // ones would flatter a queue.
        if (!answer) failed++;
        else {
          ttfts.push(answer.ttftMs);
          classTtfts[turn.userClass].push(answer.ttftMs);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: users }, (_, i) => user(i)));
  const [from, to] = await window;
  state.scraper?.stop();
  await Promise.all(children.map((child) => child.stop()));
  ttfts.sort((a, b) => a - b);
  const toSimS = (ms: number): number => ms / 1000 / TIME_SCALE;
  const meanS = (values: number[]): number => toSimS(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length));
  return {
    replicas: replicaCount,
    workload,
    policy,
    outputTokensPerSecond: (to.tokens - from.tokens) / ((to.at - from.at) / 1000 / TIME_SCALE),
    ttftMeanS: meanS(ttfts),
    ttftP99S: toSimS(ttfts[Math.min(ttfts.length - 1, Math.floor(ttfts.length * 0.99))] ?? 0),
    agentsTtftMeanS: workload === 'agents-rag' ? meanS(classTtfts.agent) : null,
    ragTtftMeanS: workload === 'agents-rag' ? meanS(classTtfts.rag) : null,
    prefixHitRate: to.queries > from.queries ? (to.hits - from.hits) / (to.queries - from.queries) : 0,
    requests,
    perReplica,
    failed,
    fallbacks,
  };
}

async function main(): Promise<void> {
  const results: RunResult[] = [];
  process.stderr.write(`simulator: ${SIM_FLAGS.join(' ')}\n`);
  for (const replicas of replicaCounts) {
    for (const workload of values.workloads.split(',') as Workload[]) {
      for (const policy of values.policies.split(',') as Policy[]) {
        const result = await runOnce(replicas, workload, policy);
        const line = `${JSON.stringify({ ...result, loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))) })}\n`;
        process.stderr.write(line);
        if (values.out) appendFileSync(values.out, line);
        results.push(result);
      }
    }
  }
  process.stdout.write(report(results));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(
      `bench:routing failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
