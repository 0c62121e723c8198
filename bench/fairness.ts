import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import { cleanEnv } from './gateway-env.js';
import { FLOW_BENCH_ADMIN, addSimChat, healthy, key, org, sleep, spread, stream } from './flow-bench.js';
import { freePort, startBuilt, startChild, type Child } from './processes.js';
import { llamaServerBinary, llamaServerMissing, llamaTinyModel } from '../test/helpers/llama-server.js';

/**
 * Issue 67: the flood on a saturated fleet, as the issue measured it. Two loaded-simulator replicas
 * of 8 sequences (10 ms a decode step); organization A keeps `FLOOD` streams of about `A_TOKENS`
 * tokens (uniform, ±50 %) in flight over 4 keys of concurrency 32; organization B sends one
 * 20-token stream every 500 ms. One gateway on the embedded default (or `GATEWAYS` on PostgreSQL
 * and Redis), with flow control on, off (TOLLGATE_FLOW_CONTROL=off), and on with A alone, in turn
 * for `SITTINGS` sittings. Prints B's first token (p50, p90, p99) and A's generated tokens a second
 * per sitting, then their medians with their spread, and A's tokens beside B over A's alone.
 * `ENGINE=llamacpp`: two llama.cpp servers (scripts/llama-server.sh's, its tiny model) of 8 slots
 * instead of the simulator. `FLOWS=on` (a comma list of on, off, alone, unpeered): only those
 * sittings; `unpeered` is flow control on with gateways not handing each other slots
 * (TOLLGATE_FLOW_PEERS=off).
 *
 * @example
 * npm run build && SECONDS_EACH=30 SITTINGS=5 npx tsx bench/fairness.ts
 * GATEWAYS=2 BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres BENCH_REDIS_URL=redis://127.0.0.1:6379 \\
 *   SECONDS_EACH=30 SITTINGS=5 npx tsx bench/fairness.ts
 * ENGINE=llamacpp SECONDS_EACH=30 SITTINGS=3 npx tsx bench/fairness.ts
 *
 * Issue 80's variants: `DECLARED=0` lists the engines by URL with nothing declared (no
 * `max_num_seqs`: the batch size is the gateway's to find out); `LENGTHS=lockstep` gives every one of
 * A's streams exactly `A_TOKENS` and starts them together (their ends come in waves, nothing frees
 * between); `POLICY=priority` starts the simulators with `--scheduling-policy priority` and declares
 * it; `WARMUP_MS` is how long A floods before B is measured (1000: from the flood's first second).
 * Each sitting also prints the most requests seen waiting inside an engine (its own
 * `num_requests_waiting`, read every 100 ms).
 * DECLARED=0 LENGTHS=lockstep WARMUP_MS=1000 FLOWS=on,alone SECONDS_EACH=20 SITTINGS=3 npx tsx bench/fairness.ts
 */
const SECONDS_EACH = Number(process.env.SECONDS_EACH ?? 20);
const SITTINGS = Number(process.env.SITTINGS ?? 1);
const FLOOD = Number(process.env.FLOOD ?? 100);
const A_TOKENS = Number(process.env.A_TOKENS ?? 500);
const GATEWAYS = Number(process.env.GATEWAYS ?? 1);
const SIM_ARGS = ['--max-num-seqs', '8', '--decode-ms-per-step', '10', '--prefill-ms-per-token', '0.01'];
const ENGINE = process.env.ENGINE === 'llamacpp' ? 'llamacpp' : 'vllm';
const FLOWS = (process.env.FLOWS ?? 'on,off,alone').split(',') as Array<Sitting['flow']>;
const DECLARED = process.env.DECLARED !== '0';
const LOCKSTEP = process.env.LENGTHS === 'lockstep';
const PRIORITY = process.env.POLICY === 'priority';
const POLICY_ARGS = PRIORITY ? ['--scheduling-policy', 'priority'] : [];
const WARMUP_MS = Number(process.env.WARMUP_MS ?? 8_000);

interface Sitting {
  /** Flow control on or off, or on with A alone (no B): what A gets alone. */
  flow: 'on' | 'off' | 'alone' | 'unpeered';
  b: { p50: number; p90: number; p99: number; count: number };
  aTokensPerSecond: number;
  /** The most requests seen waiting in one engine's own queue during the sitting. */
  engineWaitingMax: number;
}

/**
 * The store and limits two gateway replicas share (GATEWAYS > 1): a database made for this run, and
 * Redis.
 */
let shared: { databaseUrl: string; redisUrl: string } | null = null;
/** Sittings run on the shared store: the model is created in the first. */
let sittingsRun = 0;

async function main(): Promise<void> {
  if (GATEWAYS > 1) {
    const server = process.env.BENCH_DATABASE_URL;
    const redisUrl = process.env.BENCH_REDIS_URL;
    if (!server || !redisUrl) throw new Error('GATEWAYS > 1 needs BENCH_DATABASE_URL and BENCH_REDIS_URL');
    const name = `tollgate_bench_fairness_${process.pid}`;
    const admin = postgres(server, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    await admin.end();
    const databaseUrl = new URL(server);
    databaseUrl.pathname = `/${name}`;
    shared = { databaseUrl: databaseUrl.toString(), redisUrl };
    try {
      await run();
    } finally {
      const dropper = postgres(server, { max: 1, onnotice: () => {} });
      await dropper.unsafe(`drop database if exists ${name} with (force)`);
      await dropper.end();
      await forgetKeys(redisUrl);
    }
    return;
  }
  await run();
}

/** Deletes this run's Redis keys (the gateways' prefix). */
async function forgetKeys(redisUrl: string): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    for await (const keys of redis.scanStream({
      match: `bench-fairness:${process.pid}:*`,
      count: 1000,
    }) as AsyncIterable<string[]>)
      if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

async function run(): Promise<void> {
  const sims: Child[] = [];
  const urls: string[] = [];
  for (const i of [0, 1]) {
    const port = await freePort();
    sims.push(startEngine(i, port));
    await healthy(`http://127.0.0.1:${port}`);
    urls.push(`http://127.0.0.1:${port}/v1`);
  }
  const sittings: Sitting[] = [];
  try {
    for (let s = 0; s < SITTINGS; s++) {
      for (const flow of FLOWS) {
        sittings.push(await sitting(urls, flow));
        console.log(JSON.stringify(sittings.at(-1)));
      }
    }
  } finally {
    await Promise.all(sims.map((sim) => sim.stop()));
  }
  for (const flow of ['on', 'off', 'unpeered'] as const) {
    const mine = sittings.filter((s) => s.flow === flow);
    if (mine.length === 0) continue;
    const b = (pick: (s: Sitting) => number) => spread(mine.map(pick));
    console.log(
      `flow control ${flow}: B's first token p50 ${b((s) => s.b.p50)} / p90 ${b((s) => s.b.p90)} / p99 ${b((s) => s.b.p99)} ms; A ${b((s) => s.aTokensPerSecond)} tokens/s; most waiting in an engine ${b((s) => s.engineWaitingMax)} (median (spread) of ${mine.length})`,
    );
  }
  if (!FLOWS.includes('alone')) return;
  // A's share of what it gets alone, sitting by sitting (each sitting's `alone` follows its `on`).
  const ratios = sittings.flatMap((s, i) => {
    const on = sittings.slice(0, i).findLast((before) => before.flow === 'on');
    return s.flow === 'alone' && on ? [on.aTokensPerSecond / s.aTokensPerSecond] : [];
  });
  console.log(
    `A alone: ${spread(sittings.filter((s) => s.flow === 'alone').map((s) => s.aTokensPerSecond))} tokens/s; A with B, flow control on, over A alone: ${spread(ratios, 3)}`,
  );
}

/**
 * One replica of 8 sequences: the loaded simulator, or llama.cpp's server on its tiny model (8
 * slots of 1,024 tokens, one thread).
 */
function startEngine(i: number, port: number): Child {
  if (ENGINE === 'vllm')
    return startBuilt(
      `sim-${i}`,
      'dist/sim/main.js',
      ['sim-chat', '--host', '127.0.0.1', '--port', String(port), ...SIM_ARGS, ...POLICY_ARGS],
      {
        cwd: process.cwd(),
        env: process.env,
      },
    );
  const missing = llamaServerMissing();
  if (missing) throw new Error(missing);
  const args = ['-m', llamaTinyModel(), '--host', '127.0.0.1', '--port', String(port), '-t', '1'];
  // cpp-httplib holds a thread per open connection: with the default (--parallel + 2) the flood
  // without flow control would wait in the accept queue, not as the server's deferred requests.
  args.push('-c', '8192', '--parallel', '8', '--threads-http', '160', '--metrics', '--no-warmup');
  return startChild(`llama-${i}`, llamaServerBinary(), args, { cwd: process.cwd(), env: process.env });
}

async function sitting(urls: string[], flow: Sitting['flow']): Promise<Sitting> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-fairness-'));
  const engines = path.join(dir, 'engines.json');
  const engine = {
    kind: 'static',
    model: 'sim-chat',
    engine: ENGINE,
    urls,
    ...(DECLARED ? { max_num_seqs: 8 } : {}),
    ...(PRIORITY ? { scheduling_policy: 'priority' } : {}),
  };
  await writeFile(engines, JSON.stringify({ engines: [engine] }));
  // GATEWAYS=2 (with BENCH_DATABASE_URL and BENCH_REDIS_URL): two gateway replicas sharing the
  // store, the limits and the engines, each with its own flow control; A's and B's requests
  // alternate between them.
  const gateways: Child[] = [];
  const gatewayUrls: string[] = [];
  for (let g = 0; g < GATEWAYS; g++) {
    const port = await freePort();
    gatewayUrls.push(`http://127.0.0.1:${port}`);
    gateways.push(
      startBuilt(`gateway-${g}`, 'dist/main.js', [], {
        cwd: process.cwd(),
        env: {
          ...cleanEnv(),
          ...(shared ? { DATABASE_URL: shared.databaseUrl, REDIS_URL: shared.redisUrl } : {}),
          TOLLGATE_REDIS_PREFIX: `bench-fairness:${process.pid}:`,
          PORT: String(port),
          TOLLGATE_HOST: '127.0.0.1',
          TOLLGATE_DATA_DIR: path.join(dir, `gateway-${g}`),
          TOLLGATE_ADMIN_TOKEN: FLOW_BENCH_ADMIN,
          TOLLGATE_ENGINES_FILE: engines,
          TOLLGATE_FLOW_CONTROL: flow === 'off' ? 'off' : 'on',
          TOLLGATE_FLOW_PEERS: flow === 'unpeered' ? 'off' : 'on',
          TOLLGATE_SEED_DEMO: 'false',
          TOLLGATE_LOG_LEVEL: 'error',
        },
      }),
    );
    // One at a time: the first applies the store's migrations.
    await healthy(gatewayUrls[g]!);
  }
  const url = gatewayUrls[0]!;
  const via = (i: number) => gatewayUrls[i % GATEWAYS]!;
  try {
    for (const gatewayUrl of gatewayUrls) await healthy(gatewayUrl);
    if (!shared || sittingsRun++ === 0) await addSimChat(url);
    const aOrg = await org(url, 'A');
    const aKeys = await Promise.all([0, 1, 2, 3].map(() => key(url, aOrg, 32)));
    // B's key allows all its trickle in flight: a wait is measured as a wait, not turned into a
    // 429.
    const bKey = await key(url, await org(url, 'B'), 100);
    let running = true;
    let aTokens = 0;
    const flood = Array.from({ length: FLOOD }, async (_, i) => {
      // About A_TOKENS each (uniform, ±50 %): streams of one length end in lockstep, and the fleet
      // frees in waves no real flood makes. A flood's streams arrive over a few seconds, not in one
      // instant.
      if (!LOCKSTEP) await sleep(Math.random() * 5_000);
      while (running) {
        const length = LOCKSTEP ? A_TOKENS : Math.round(A_TOKENS * (0.5 + Math.random()));
        const { tokens } = await stream(via(i), aKeys[i % 4]!, length);
        // Added after the await: `aTokens += await …` would add to the total read before it, losing
        // other streams'.
        aTokens += tokens;
      }
    });
    const watcher = watchEngineQueues(urls);
    // A's flood fills the fleet and its queue before B is measured.
    await sleep(WARMUP_MS);
    const startedAt = performance.now();
    const aBefore = aTokens;
    const times: number[] = [];
    const pending: Array<Promise<void>> = [];
    for (let sent = 0; performance.now() - startedAt < SECONDS_EACH * 1000; sent++) {
      if (flow !== 'alone') pending.push(stream(via(sent), bKey, 20).then((r) => void times.push(r.firstTokenMs)));
      await sleep(500);
    }
    await Promise.all(pending);
    const aTokensPerSecond = ((aTokens - aBefore) * 1000) / (performance.now() - startedAt);
    running = false;
    await Promise.all(flood);
    const engineWaitingMax = await watcher.stop();
    const sorted = [...times].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    const b = times.length
      ? { p50: at(0.5), p90: at(0.9), p99: at(0.99), count: times.length }
      : { p50: NaN, p90: NaN, p99: NaN, count: 0 };
    return { flow, b, aTokensPerSecond, engineWaitingMax };
  } finally {
    await Promise.all(gateways.map((gateway) => gateway.stop()));
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Reads every engine's own waiting count (vLLM's `num_requests_waiting`, llama.cpp's deferred
 * requests) every 100 ms until stopped: the most seen in one engine.
 */
function watchEngineQueues(urls: string[]): { stop(): Promise<number> } {
  let most = 0;
  let watching = true;
  const loop = (async () => {
    while (watching) {
      for (const url of urls) {
        const text = await fetch(url.replace(/\/v1$/, '/metrics')).then(
          (r) => r.text(),
          () => '',
        );
        const line = /^(?:vllm:num_requests_waiting|llamacpp:requests_deferred)(?:\{[^}]*\})? ([\d.]+)/m.exec(text);
        if (line) most = Math.max(most, Number(line[1]));
      }
      await sleep(100);
    }
  })();
  return {
    async stop() {
      watching = false;
      await loop;
      return most;
    },
  };
}

await main();
