import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startBuilt, type Child } from './processes.js';

/**
 * Issue 67: the flood on a saturated fleet, as the issue measured it. Two loaded-simulator replicas of 8 sequences
 * (10 ms a decode step); organization A keeps `FLOOD` streams of `A_TOKENS` tokens in flight over 4 keys of
 * concurrency 32; organization B sends one 20-token stream every 500 ms. One gateway on the embedded default, once
 * with flow control and once without (TOLLGATE_FLOW_CONTROL=off), alternating for `SITTINGS` sittings. Prints B's
 * first token (p50, p90, p99) and A's generated tokens a second, per sitting and as medians.
 *
 * @example
 * npm run build && SECONDS_EACH=30 SITTINGS=5 npx tsx bench/fairness.ts
 */
const ADMIN = 'fairness-bench-operator-token';
const SECONDS_EACH = Number(process.env.SECONDS_EACH ?? 20);
const SITTINGS = Number(process.env.SITTINGS ?? 1);
const FLOOD = Number(process.env.FLOOD ?? 100);
const A_TOKENS = Number(process.env.A_TOKENS ?? 500);
const SIM_ARGS = ['--max-num-seqs', '8', '--decode-ms-per-step', '10', '--prefill-ms-per-token', '0.01'];

interface Sitting {
  flow: 'on' | 'off';
  b: { p50: number; p90: number; p99: number; count: number };
  aTokensPerSecond: number;
}

async function main(): Promise<void> {
  const sims: Child[] = [];
  const urls: string[] = [];
  for (const i of [0, 1]) {
    const port = await freePort();
    const sim = startBuilt(
      `sim-${i}`,
      'dist/sim/main.js',
      ['sim-chat', '--host', '127.0.0.1', '--port', String(port), ...SIM_ARGS],
      {
        cwd: process.cwd(),
        env: process.env,
      },
    );
    sims.push(sim);
    await healthy(`http://127.0.0.1:${port}`);
    urls.push(`http://127.0.0.1:${port}/v1`);
  }
  const sittings: Sitting[] = [];
  try {
    for (let s = 0; s < SITTINGS; s++) {
      for (const flow of ['on', 'off'] as const) sittings.push(await sitting(urls, flow));
    }
  } finally {
    await Promise.all(sims.map((sim) => sim.stop()));
  }
  for (const s of sittings) console.log(JSON.stringify(s));
  for (const flow of ['on', 'off'] as const) {
    const mine = sittings.filter((s) => s.flow === flow);
    const med = (pick: (s: Sitting) => number) => median(mine.map(pick)).toFixed(0);
    console.log(
      `flow control ${flow}: B's first token p50 ${med((s) => s.b.p50)} / p90 ${med((s) => s.b.p90)} / p99 ${med((s) => s.b.p99)} ms; A ${med((s) => s.aTokensPerSecond)} tokens/s (median of ${mine.length})`,
    );
  }
}

async function sitting(urls: string[], flow: 'on' | 'off'): Promise<Sitting> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-fairness-'));
  const engines = path.join(dir, 'engines.json');
  const engine = { kind: 'static', model: 'sim-chat', engine: 'vllm', urls, max_num_seqs: 8 };
  await writeFile(engines, JSON.stringify({ engines: [engine] }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = startBuilt('gateway', 'dist/main.js', [], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      PORT: String(port),
      TOLLGATE_DATA_DIR: dir,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_ENGINES_FILE: engines,
      TOLLGATE_FLOW_CONTROL: flow,
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_LOG_LEVEL: 'error',
    },
  });
  try {
    await healthy(url);
    await admin(url, 'POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'bench/sim-chat',
      task_type: 'chat',
      context_length: 8192,
    });
    await admin(url, 'PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    const aOrg = await org(url, 'A');
    const aKeys = await Promise.all([0, 1, 2, 3].map(() => key(url, aOrg, 32)));
    const bKey = await key(url, await org(url, 'B'), 4);
    let running = true;
    let aTokens = 0;
    const flood = Array.from({ length: FLOOD }, async (_, i) => {
      while (running) aTokens += (await stream(url, aKeys[i % 4]!, A_TOKENS)).tokens;
    });
    // A's flood fills the fleet and its queue before B is measured.
    await sleep(3_000);
    const startedAt = performance.now();
    const aBefore = aTokens;
    const times: number[] = [];
    const pending: Array<Promise<void>> = [];
    while (performance.now() - startedAt < SECONDS_EACH * 1000) {
      pending.push(stream(url, bKey, 20).then((r) => void times.push(r.firstTokenMs)));
      await sleep(500);
    }
    await Promise.all(pending);
    const aTokensPerSecond = ((aTokens - aBefore) * 1000) / (performance.now() - startedAt);
    running = false;
    await Promise.all(flood);
    const sorted = [...times].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
    return { flow, b: { p50: at(0.5), p90: at(0.9), p99: at(0.99), count: times.length }, aTokensPerSecond };
  } finally {
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** One streamed chat: ms to its first content and the tokens it generated (its usage). */
async function stream(url: string, secret: string, maxTokens: number) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Write.' }],
      max_tokens: maxTokens,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  let firstTokenMs = Infinity;
  let text = '';
  const decoder = new TextDecoder();
  for await (const bytes of response.body!) {
    const chunk = decoder.decode(bytes, { stream: true });
    if (firstTokenMs === Infinity && chunk.includes('"content":"')) firstTokenMs = performance.now() - started;
    text += chunk;
  }
  const usage = /"completion_tokens":(\d+)/.exec(text);
  return { firstTokenMs, tokens: usage ? Number(usage[1]) : 0 };
}

async function admin(url: string, method: string, route: string, body: unknown) {
  const response = await fetch(`${url}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

async function org(url: string, name: string): Promise<string> {
  const created = await admin(url, 'POST', '/orgs', { name });
  await admin(url, 'POST', `/orgs/${String(created.id)}/wallet/topups`, { amount: '1000.00' });
  return String(created.id);
}

async function key(url: string, orgId: string, concurrency: number): Promise<string> {
  const created = await admin(url, 'POST', `/orgs/${orgId}/keys`, {
    name: 'bench',
    max_concurrency: concurrency,
    requests_per_minute: 100_000,
  });
  return String(created.secret);
}

async function healthy(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(100);
  }
  throw new Error(`${url} never answered /health`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

await main();
