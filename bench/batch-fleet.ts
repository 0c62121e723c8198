import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv } from './gateway-env.js';
import { FLOW_BENCH_ADMIN, addSimChat, healthy, key, org, sleep, spread, stream } from './flow-bench.js';
import { freePort, startBuilt, type Child } from './processes.js';

/**
 * Issue 72: a batch on the fleet's idle capacity. The flood bench's fleet (two loaded-simulator
 * replicas of 8 sequences, 10 ms a decode step) and one gateway on the embedded default. Three
 * sittings in turn, `SITTINGS` times:
 * - `flood`: organization A keeps `FLOOD` streams of about `TOKENS` tokens in flight: what the
 *   fleet serves when it is full;
 * - `batch`: A's batch of `LINES` lines of about `TOKENS` tokens each, nothing else: the tokens a
 *   second its lines are billed while it runs, over the flood's;
 * - `beside`: the same batch, and organization B's one 20-token stream every 500 ms in the default
 *   band: B's first token (p50, p90, p99), to set beside the flood bench's.
 *
 * @example
 * npm run build && SECONDS_EACH=30 SITTINGS=5 npx tsx bench/batch-fleet.ts
 */
const SECONDS_EACH = Number(process.env.SECONDS_EACH ?? 20);
const SITTINGS = Number(process.env.SITTINGS ?? 1);
const FLOOD = Number(process.env.FLOOD ?? 100);
const TOKENS = Number(process.env.TOKENS ?? 500);
const LINES = Number(process.env.LINES ?? 2_000);
const POLICY = process.env.POLICY === 'priority' ? 'priority' : 'fcfs';
const SIM_ARGS = ['--max-num-seqs', '8', '--decode-ms-per-step', '10', '--prefill-ms-per-token', '0.01'];
SIM_ARGS.push('--scheduling-policy', POLICY);

type Kind = 'flood' | 'batch' | 'beside';
interface Sitting {
  kind: Kind;
  tokensPerSecond: number;
  b?: { p50: number; p90: number; p99: number; count: number };
}

async function main(): Promise<void> {
  const sims: Child[] = [];
  const urls: string[] = [];
  for (const i of [0, 1]) {
    const port = await freePort();
    const args = ['sim-chat', '--host', '127.0.0.1', '--port', String(port), ...SIM_ARGS];
    sims.push(startBuilt(`sim-${i}`, 'dist/sim/main.js', args, { cwd: process.cwd(), env: process.env }));
    await healthy(`http://127.0.0.1:${port}`);
    urls.push(`http://127.0.0.1:${port}/v1`);
  }
  const sittings: Sitting[] = [];
  try {
    for (let s = 0; s < SITTINGS; s++)
      for (const kind of ['flood', 'batch', 'beside'] as const) {
        sittings.push(await sitting(urls, kind));
        console.log(JSON.stringify(sittings.at(-1)));
      }
  } finally {
    await Promise.all(sims.map((sim) => sim.stop()));
  }
  const of = (kind: Kind) => sittings.filter((s) => s.kind === kind);
  // Each sitting's batch over the flood just before it.
  const ratios = sittings.flatMap((s, i) =>
    s.kind === 'batch' ? [s.tokensPerSecond / sittings[i - 1]!.tokensPerSecond] : [],
  );
  const b = (pick: (s: NonNullable<Sitting['b']>) => number) => spread(of('beside').map((s) => pick(s.b!)));
  console.log(`flood: ${spread(of('flood').map((s) => s.tokensPerSecond))} tokens/s`);
  console.log(
    `batch alone: ${spread(of('batch').map((s) => s.tokensPerSecond))} tokens/s, over the flood's ${spread(ratios, 3)}`,
  );
  console.log(
    `B beside the batch: first token p50 ${b((s) => s.p50)} / p90 ${b((s) => s.p90)} / p99 ${b((s) => s.p99)} ms; the batch ${spread(of('beside').map((s) => s.tokensPerSecond))} tokens/s (median (spread) of ${of('beside').length})`,
  );
}

async function sitting(urls: string[], kind: Kind): Promise<Sitting> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-batch-fleet-'));
  const engines = path.join(dir, 'engines.json');
  const engine = {
    kind: 'static',
    model: 'sim-chat',
    engine: 'vllm',
    urls,
    max_num_seqs: 8,
    scheduling_policy: POLICY,
  };
  await writeFile(engines, JSON.stringify({ engines: [engine] }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = startBuilt('gateway', 'dist/main.js', [], {
    cwd: process.cwd(),
    env: {
      ...cleanEnv(),
      PORT: String(port),
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: path.join(dir, 'gateway'),
      TOLLGATE_ADMIN_TOKEN: FLOW_BENCH_ADMIN,
      TOLLGATE_ENGINES_FILE: engines,
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_LOG_LEVEL: 'error',
    },
  });
  try {
    await healthy(url);
    await addSimChat(url);
    const aOrg = await org(url, 'A');
    const aKey = await key(url, aOrg, 200);
    if (kind === 'flood')
      return {
        kind,
        tokensPerSecond: await flood(
          url,
          [0, 1, 2, 3].map(() => aKey),
        ),
      };
    const bKey = kind === 'beside' ? await key(url, await org(url, 'B'), 100) : null;
    return await batchSitting(url, aKey, bKey);
  } finally {
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** A's flood for SECONDS_EACH after 8 s of filling: the tokens a second its streams were served. */
async function flood(url: string, keys: string[]): Promise<number> {
  let running = true;
  let tokens = 0;
  const streams = Array.from({ length: FLOOD }, async (_, i) => {
    await sleep(Math.random() * 5_000);
    while (running) {
      const served = await stream(url, keys[i % keys.length]!, Math.round(TOKENS * (0.5 + Math.random())));
      tokens += served.tokens;
    }
  });
  await sleep(8_000);
  const before = tokens;
  const startedAt = performance.now();
  await sleep(SECONDS_EACH * 1000);
  const perSecond = ((tokens - before) * 1000) / (performance.now() - startedAt);
  running = false;
  await Promise.all(streams);
  return perSecond;
}

/**
 * A's batch, from 8 s after it started for SECONDS_EACH: its billed output tokens a second (as the
 * batch's `usage` counts them) and, with B's key, B's first tokens meanwhile. Cancels it after.
 */
async function batchSitting(url: string, aKey: string, bKey: string | null): Promise<Sitting> {
  const lines = Array.from({ length: LINES }, (_, i) =>
    JSON.stringify({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: {
        model: 'sim-chat',
        messages: [{ role: 'user', content: `Write ${i}.` }],
        max_tokens: Math.round(TOKENS * (0.5 + Math.random())),
        ignore_eos: true,
      },
    }),
  );
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([lines.join('\n') + '\n']), 'lines.jsonl');
  const file = await call(url, aKey, 'POST', '/v1/files', form);
  const batch = await call(url, aKey, 'POST', '/v1/batches', {
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  const outputTokens = async () => {
    const now = await call(url, aKey, 'GET', `/v1/batches/${String(batch.id)}`);
    return Number((now.usage as { output_tokens?: number } | undefined)?.output_tokens ?? 0);
  };
  await sleep(8_000);
  const before = await outputTokens();
  const startedAt = performance.now();
  const times: number[] = [];
  const pending: Array<Promise<void>> = [];
  while (performance.now() - startedAt < SECONDS_EACH * 1000) {
    if (bKey) pending.push(stream(url, bKey, 20).then((r) => void times.push(r.firstTokenMs)));
    await sleep(500);
  }
  const tokensPerSecond = (((await outputTokens()) - before) * 1000) / (performance.now() - startedAt);
  await Promise.all(pending);
  await call(url, aKey, 'POST', `/v1/batches/${String(batch.id)}/cancel`, {});
  if (!bKey) return { kind: 'batch', tokensPerSecond };
  const sorted = [...times].sort((x, y) => x - y);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { kind: 'beside', tokensPerSecond, b: { p50: at(0.5), p90: at(0.9), p99: at(0.99), count: times.length } };
}

async function call(url: string, secret: string, method: string, route: string, body?: unknown) {
  const json = body !== undefined && !(body instanceof FormData);
  const response = await fetch(`${url}${route}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(json ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : json ? JSON.stringify(body) : body,
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

await main();
