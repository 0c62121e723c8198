import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { processCpuNs } from './cpu.js';
import { freePort, rssMiB, startBuilt, waitForHealth, type Child } from './processes.js';
import { provision } from './setup.js';

/**
 * `npm run bench:streams`: many concurrent streams through ONE gateway
 * process, against a slow upstream (the simulator, 10 ms between tokens):
 * at 1, 128, 1,000 and 5,000 streams at once, each stream's time to first
 * token straight to the simulator and through the gateway, how many
 * completed (every token and `[DONE]`), the gateway's memory per open
 * stream, its CPU per stream (all its threads, the journal's writes
 * included), and whether every stream was billed. A report, never a test.
 * BENCH_DATABASE_URL / BENCH_REDIS_URL as for `npm run bench`.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_TOKEN = 'bench-operator-token-0123456789';
const LEVELS = (process.env.BENCH_STREAM_LEVELS ?? '1,128,1000,5000').split(',').map(Number);
const TOKENS = 32;
const ITL_MS = 10;

interface StreamResult {
  ttftMs: number;
  completed: boolean;
  requestId: string | null;
  /** Why a stream did not complete: its status, or the socket error's code. */
  failure?: string;
}

/** Opens one stream and reads it to its end. */
function openStream(
  agent: http.Agent,
  url: string,
  secret: string | null,
  onFirstToken: () => void,
): Promise<StreamResult> {
  const body = JSON.stringify({
    model: 'sim-chat',
    stream: true,
    max_tokens: TOKENS,
    ignore_eos: true,
    messages: [{ role: 'user', content: 'many streams' }],
  });
  return new Promise((resolve) => {
    const started = performance.now();
    let ttftMs = -1;
    let text = '';
    const request = http.request(
      `${url}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', ...(secret ? { authorization: `Bearer ${secret}` } : {}) },
      },
      (response) => {
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (ttftMs < 0 && chunk.includes('"content"')) {
            ttftMs = performance.now() - started;
            onFirstToken();
          }
          text += chunk;
        });
        response.on('end', () => {
          const tokens = text.split('\n\n').filter((event) => event.includes('"content":"')).length;
          const completed = response.statusCode === 200 && tokens >= TOKENS && text.trimEnd().endsWith('data: [DONE]');
          const failure = completed
            ? undefined
            : response.statusCode === 200
              ? `cut after ${tokens} tokens`
              : `status ${response.statusCode}`;
          resolve({ ttftMs, completed, requestId: (response.headers['x-request-id'] as string) ?? null, failure });
        });
        response.on('error', (error: NodeJS.ErrnoException) =>
          resolve({ ttftMs, completed: false, requestId: null, failure: error.code ?? error.message }),
        );
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ ttftMs, completed: false, requestId: null, failure: error.code ?? error.message }),
    );
    request.end(body);
  });
}

/**
 * N streams at once; the gateway's RSS is sampled once all have their first token (all open at
 * once).
 */
async function level(n: number, url: string, secret: string | null, gateway: Child | null) {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  let firsts = 0;
  let rssOpen = 0;
  const sampled = new Promise<void>((resolve) => {
    const check = async () => {
      if (gateway) rssOpen = (await rssMiB(gateway.pid)) ?? 0;
      resolve();
    };
    (globalThis as { onAllFirst?: () => void }).onAllFirst = () => void check();
  });
  const results = await Promise.all(
    Array.from({ length: n }, () =>
      openStream(agent, url, secret, () => {
        firsts += 1;
        if (firsts === n) (globalThis as { onAllFirst?: () => void }).onAllFirst?.();
      }),
    ),
  );
  if (firsts === n) await sampled;
  agent.destroy();
  const ttfts = results
    .map((r) => r.ttftMs)
    .filter((t) => t >= 0)
    .sort((a, b) => a - b);
  const pick = (q: number) => ttfts[Math.min(ttfts.length - 1, Math.floor(q * ttfts.length))] ?? NaN;
  const failures = new Map<string, number>();
  for (const r of results) if (r.failure) failures.set(r.failure, (failures.get(r.failure) ?? 0) + 1);
  return {
    completed: results.filter((r) => r.completed).length,
    p50: pick(0.5),
    p99: pick(0.99),
    rssOpen,
    ids: results.map((r) => r.requestId),
    failures,
  };
}

async function main(): Promise<void> {
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-streams-'));
  const children: Child[] = [];
  try {
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    const sim = startBuilt(
      'simulator',
      'dist/sim/main.js',
      ['--port', String(simPort), '--model', 'sim-chat', '--itl-ms', String(ITL_MS)],
      { cwd: ROOT, env: { PATH: process.env.PATH } },
    );
    children.push(sim);
    await waitForHealth(sim, `${simUrl}/health`, 60_000);
    const enginesFile = path.join(tempDir, 'engines.json');
    await writeFile(enginesFile, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: simUrl }] }));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const databaseUrl = process.env.BENCH_DATABASE_URL;
    const redisUrl = process.env.BENCH_REDIS_URL;
    const gateway = startBuilt('gateway', 'dist/main.js', [], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        PORT: String(port),
        TOLLGATE_HOST: '127.0.0.1',
        TOLLGATE_DATA_DIR: path.join(tempDir, 'data'),
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
        ...(redisUrl ? { REDIS_URL: redisUrl, TOLLGATE_REDIS_PREFIX: `bench-streams:${process.pid}:` } : {}),
        TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
        TOLLGATE_SEED_DEMO: 'false',
        TOLLGATE_LOG_LEVEL: 'warn',
        TOLLGATE_ENGINES_FILE: enginesFile,
        // The checkpoints' cadence, to measure what they cost (docs/billing.md, "Streams cut by a
        // crash").
        ...Object.fromEntries(
          Object.entries(process.env).filter(([name]) => name.startsWith('TOLLGATE_STREAM_CHECKPOINT_')),
        ),
      },
    });
    children.push(gateway);
    await waitForHealth(gateway, `${url}/health`, 60_000);
    const secret = await provision(url, ADMIN_TOKEN);
    // One stream first: the first request of a key fills the gateway's caches (key, model, wallet),
    // not what is measured.
    await level(1, url, secret, null);
    const rssIdle = (await rssMiB(gateway.pid)) ?? 0;
    console.log(
      `streams of ${TOKENS} tokens, ${ITL_MS} ms apart; store ${databaseUrl ? 'postgres' : 'pglite'}, limits ${redisUrl ? 'redis' : 'memory'}; gateway RSS idle ${rssIdle.toFixed(0)} MiB`,
    );
    console.log(
      '| streams | completed direct / gateway | TTFT p50 direct → gateway (added) | TTFT p99 direct → gateway | gateway RSS, all open | per stream | gateway CPU per stream |',
    );
    console.log('|---|---|---|---|---|---|---|');
    const billedIds: string[] = [];
    const failures: string[] = [];
    for (const n of LEVELS) {
      const direct = await level(n, simUrl, null, null);
      const cpuBefore = await processCpuNs(gateway.pid);
      const through = await level(n, url, secret, gateway);
      const cpuAfter = await processCpuNs(gateway.pid);
      const cpuPerStream =
        cpuBefore !== null && cpuAfter !== null ? `${((cpuAfter - cpuBefore) / n / 1000).toFixed(0)} µs` : 'n/a';
      for (const [side, result] of [
        ['direct', direct],
        ['gateway', through],
      ] as const) {
        if (result.failures.size > 0)
          failures.push(
            `${n} streams, ${side}: ${[...result.failures].map(([why, count]) => `${count} × ${why}`).join(', ')}`,
          );
      }
      billedIds.push(...through.ids.filter((id): id is string => id !== null));
      const perStream = through.rssOpen > 0 ? `${(((through.rssOpen - rssIdle) * 1024) / n).toFixed(1)} KiB` : 'n/a';
      console.log(
        `| ${n} | ${direct.completed} / ${through.completed} | ${direct.p50.toFixed(1)} → ${through.p50.toFixed(1)} ms (+${(through.p50 - direct.p50).toFixed(1)}) | ${direct.p99.toFixed(1)} → ${through.p99.toFixed(1)} ms | ${through.rssOpen.toFixed(0)} MiB | ${perStream} | ${cpuPerStream} |`,
      );
    }
    // Every stream billed: the usage summary counts this organization's requests (it waits for the
    // journal to be written).
    const usage = await fetch(`${url}/v1/usage/summary`, { headers: { authorization: `Bearer ${secret}` } });
    const summary = (await usage.json()) as { totals?: { requests?: number } };
    console.log(
      `streams sent through the gateway: ${billedIds.length}; requests in its usage summary: ${summary.totals?.requests ?? 'unknown'}`,
    );
    for (const line of failures) console.log(`not completed: ${line}`);
  } finally {
    await Promise.allSettled(children.map((child) => child.stop()));
    await rm(tempDir, { recursive: true, force: true });
  }
}

await main();
