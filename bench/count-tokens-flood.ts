import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startBuilt, startChild } from './processes.js';

/**
 * Issue 68, item 1: what a flood of `/v1/messages/count_tokens` on one organization's key does to
 * another organization's chat. One gateway (`dist/main.js`, the embedded default: PGlite, the
 * in-process simulator at 0 ms a token); 16 clients send 3.66 MB count bodies as fast as they are
 * answered on the first organization's key (its default limits: 60 a minute, 10 at once), while the
 * second organization sends one 1-token chat at a time. Prints the chat's latency (p50, p99, max)
 * alone and under the flood, and what the flood got.
 *
 * @example
 * npm run build && npx tsx bench/count-tokens-flood.ts
 */
const ADMIN = 'count-tokens-flood-operator-token';
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 8);

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-flood-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = startBuilt('gateway', 'dist/main.js', [], {
    cwd: process.cwd(),
    env: {
      ...process.env,
      PORT: String(port),
      TOLLGATE_DATA_DIR: dir,
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_SIM_TTFT_MS: '0',
      TOLLGATE_SIM_ITL_MS: '0',
      TOLLGATE_LOG_LEVEL: 'error',
    },
  });
  try {
    await healthy(url);
    const flooder = await tenant(url, 'flooder');
    const victim = await tenant(url, 'victim', { requests_per_minute: 100_000 });
    const alone = await chatLatencies(url, victim, 3);
    // The flood runs in a process of its own, so its uploads do not slow the measuring client's
    // event loop.
    const args = ['--import', 'tsx', 'bench/count-tokens-flood.ts', '--flood', url, flooder];
    const flood = startChild('flood', process.execPath, args, { cwd: process.cwd(), env: process.env });
    const flooded = await chatLatencies(url, victim, SECONDS);
    await flood.stop('SIGINT');
    const show = (name: string, ms: number[]) => {
      const sorted = [...ms].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
      console.log(`${name}: ${ms.length} chats, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
    };
    show('alone', alone);
    show('under the count_tokens flood', flooded);
    console.log(flood.output().trim());
  } finally {
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function healthy(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`${url}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the gateway did not become ready');
}

async function admin<T>(url: string, method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(`${url}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** An organization with money and a key (of the default limits but for `limits`); its secret. */
async function tenant(url: string, name: string, limits: Record<string, number> = {}): Promise<string> {
  const org = await admin<{ id: string }>(url, 'POST', '/orgs', { name });
  await admin(url, 'POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
  return (await admin<{ secret: string }>(url, 'POST', `/orgs/${org.id}/keys`, { name, ...limits })).secret;
}

/** One 1-token chat at a time for `seconds`: each one's latency (ms). */
async function chatLatencies(url: string, secret: string, seconds: number): Promise<number[]> {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await response.arrayBuffer();
    if (response.status !== 200) throw new Error(`chat answered ${response.status}`);
    latencies.push(performance.now() - started);
  }
  return latencies;
}

/**
 * The flood: 16 clients sending 3.66 MB count bodies on `secret`'s key until interrupted; prints
 * their statuses.
 */
async function floodOf(url: string, secret: string): Promise<void> {
  const body = JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'x'.repeat(3_660_000) }] });
  let running = true;
  const statuses = new Map<number, number>();
  process.once('SIGINT', () => (running = false));
  const clients = Array.from({ length: 16 }, async () => {
    while (running) {
      const response = await fetch(`${url}/v1/messages/count_tokens`, {
        method: 'POST',
        headers: { 'x-api-key': secret, 'content-type': 'application/json' },
        body,
      }).catch(() => null);
      if (!response) continue;
      await response.arrayBuffer();
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
  });
  await Promise.all(clients);
  console.log(`the flood's answers by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
}

if (process.argv[2] === '--flood') await floodOf(process.argv[3]!, process.argv[4]!);
else await main();
