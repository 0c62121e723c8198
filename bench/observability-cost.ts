import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createAgent, runSlice } from './load.js';
import { startOtlpSink } from './otlp-sink.js';
import { freePort, startBuilt, waitForHealth, type Child } from './processes.js';
import { provision } from './setup.js';

/**
 * `npm run bench:observability`: what metrics and traces cost the gateway,
 * as CPU time per request, which a shared machine disturbs far less than
 * throughput. Three gateway processes on the same simulator, one with
 * TOLLGATE_METRICS=off, one as shipped (metrics on), one also sending every
 * span over OTLP to a local sink; the same load goes to each in interleaved
 * rounds, and each process's CPU time (user + system, from /proc) is divided
 * by the requests it answered. A report, never a pass/fail test.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_TOKEN = 'bench-operator-token-0123456789';
const CLOCK_TICKS_PER_SECOND = 100;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    // Off: no holds, charges or usage records, whose group commits into PGlite make CPU per request
    // swing with batch sizes.
    billing: { type: 'string', default: 'on' },
  },
});
if (!['on', 'off'].includes(values.billing)) throw new Error(`--billing must be on or off, got ${values.billing}`);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);

/** A process's CPU time so far (user + system), in ms, from /proc/PID/stat. */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'; utime and stime
  // are the 12th and 13th of them.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
}

async function main(): Promise<void> {
  const children: Child[] = [];
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-obs-'));
  const sink = await startOtlpSink();
  try {
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    const sim = startBuilt(
      'simulator',
      'dist/sim/main.js',
      ['--port', String(simPort), '--model', 'sim-chat', '--model', 'sim-embed:embedding'],
      { cwd: ROOT, env: process.env },
    );
    children.push(sim);
    await waitForHealth(sim, `${simUrl}/health`, 60_000);
    const enginesFile = path.join(tempDir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({ engines: ['sim-chat', 'sim-embed'].map((model) => ({ kind: 'static', model, url: simUrl })) }),
    );
    const variants = [
      { name: 'metrics off', env: { TOLLGATE_METRICS: 'off' } },
      { name: 'metrics on', env: {} },
      { name: 'metrics + traces', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
    ];
    const gateways = [];
    for (const [index, variant] of variants.entries()) {
      const port = await freePort();
      const env = Object.fromEntries(
        Object.entries(process.env).filter(
          ([name]) => !/^(TOLLGATE|SIM|OTEL)_/.test(name) && !['PORT', 'DATABASE_URL', 'REDIS_URL'].includes(name),
        ),
      );
      const child = startBuilt(variant.name, 'dist/main.js', [], {
        cwd: ROOT,
        env: {
          ...env,
          PORT: String(port),
          TOLLGATE_HOST: '127.0.0.1',
          TOLLGATE_DATA_DIR: path.join(tempDir, `g${index}`),
          TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
          TOLLGATE_SEED_DEMO: 'false',
          TOLLGATE_LOG_LEVEL: 'warn',
          TOLLGATE_ENGINES_FILE: enginesFile,
          TOLLGATE_BILLING: values.billing,
          ...variant.env,
        },
      });
      children.push(child);
      const url = `http://127.0.0.1:${port}`;
      await waitForHealth(child, `${url}/health`, 60_000);
      gateways.push({ ...variant, child, url, secret: await provision(url, ADMIN_TOKEN) });
    }
    const scenarios = [
      {
        name: 'chat-json',
        path: '/v1/chat/completions',
        stream: false,
        body: {
          model: 'sim-chat',
          max_tokens: 32,
          ignore_eos: true,
          messages: [{ role: 'user', content: 'Write a short note about toll roads.' }],
        },
      },
      {
        name: 'chat-stream',
        path: '/v1/chat/completions',
        stream: true,
        body: {
          model: 'sim-chat',
          max_tokens: 32,
          ignore_eos: true,
          stream: true,
          messages: [{ role: 'user', content: 'Write a short note about toll roads.' }],
        },
      },
      {
        name: 'embeddings',
        path: '/v1/embeddings',
        stream: false,
        body: { model: 'sim-embed', input: ['The quick brown fox.', 'Gateways meter every request.'] },
      },
    ];
    const lines = [
      `CPU time per request (user + system), ${concurrency} connections, ${rounds} interleaved rounds of ${seconds} s per gateway, billing ${values.billing}`,
      '',
    ];
    for (const scenario of scenarios) {
      const totals = gateways.map(() => ({ cpu: 0, requests: 0, errors: 0, perRound: [] as number[] }));
      const agents = gateways.map(() => createAgent(concurrency));
      const body = JSON.stringify(scenario.body);
      for (let round = 0; round <= rounds; round++) {
        // Each round starts with a different gateway, so no variant always follows the same one.
        const order = gateways.map((_, k) => (k + round) % gateways.length);
        for (const i of order) {
          const gateway = gateways[i]!;
          process.stderr.write(`bench: ${scenario.name} round ${round} ${gateway.name} …\n`);
          const target = {
            url: `${gateway.url}${scenario.path}`,
            headers: { authorization: `Bearer ${gateway.secret}` },
          };
          const before = await cpuMs(gateway.child.pid);
          const slice = await runSlice(target, agents[i]!, {
            body,
            stream: scenario.stream,
            concurrency,
            durationMs: round === 0 ? 1000 : seconds * 1000,
          });
          const after = await cpuMs(gateway.child.pid);
          if (round === 0) continue; // warm-up
          const ok = slice.samples.filter((s) => s.ok).length;
          totals[i]!.cpu += after - before;
          totals[i]!.requests += ok;
          totals[i]!.perRound.push((after - before) / ok);
          totals[i]!.errors += slice.samples.filter((s) => !s.ok).length;
        }
      }
      for (const agent of agents) agent.destroy();
      const perRequest = totals.map((t) => (t.cpu * 1000) / t.requests);
      lines.push(scenario.name);
      for (const [i, gateway] of gateways.entries()) {
        const ratio = perRequest[i]! / perRequest[0]!;
        // The same ratio round by round: its spread says how much the machine disturbed the
        // measurement.
        const rounds = totals[i]!.perRound.map((cpu, round) => (cpu / totals[0]!.perRound[round]!).toFixed(2)).join(
          ' ',
        );
        lines.push(
          `  ${gateway.name.padEnd(18)} ${perRequest[i]!.toFixed(0).padStart(6)} µs CPU/request  ${ratio.toFixed(3)}× (${totals[i]!.requests} requests, ${totals[i]!.errors} errors; by round: ${rounds})`,
        );
      }
      lines.push('');
    }
    lines.push(`OTLP sink: ${sink.stats().exports} exports, ${sink.stats().bytes} bytes received`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await sink.close();
    await rm(tempDir, { recursive: true, force: true });
  }
}

await main();
