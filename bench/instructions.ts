import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { ADMIN_TOKEN, cleanEnv, forgetGatewayKeys, gatewayEnv } from './gateway-env.js';
import { createAgent, runSlice } from './load.js';
import { type Child, freePort, startBuilt, startChild, waitForHealth } from './processes.js';
import { allScenarios } from './scenarios.js';
import { provision } from './setup.js';

/**
 * `npm run bench:instructions`: the gateway's machine instructions per request, counted by
 * valgrind's callgrind. CPU time on a shared VM moves by a third from run to run; an instruction
 * count moves by a few per cent, so a change of 5 % shows here when `npm run bench` cannot see it.
 * It counts user space only: the kernel's side of each system call is what `npm run bench`'s
 * system-call counts are for (under valgrind they are not the gateway's own: valgrind's thread lock
 * is a pipe). The gateway runs about 50 times slower under valgrind (some 30 requests a second), so
 * its latencies mean nothing here, and work that is batched at full load (Redis pipelines, charges
 * written together) is done about once per request: the count is that of a lightly loaded gateway,
 * a measure to compare two builds by, not a CPU figure.
 *
 * For each scenario: a warm-up (the JIT settles), then `--rounds` windows of `--seconds`, each
 * zeroed and dumped with `callgrind_control`, reported as instructions per answered request. Same
 * settings as `npm run bench` (PostgreSQL with BENCH_DATABASE_URL, Redis with BENCH_REDIS_URL,
 * otherwise PGlite and in-memory limits).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

/** The scenarios by name, chats of 64 tokens. */
const SCENARIOS = Object.fromEntries(allScenarios(64).map((scenario) => [scenario.name, scenario]));

function readSettings() {
  const { values } = parseArgs({
    options: {
      // The Messages stream only when named: each scenario adds minutes.
      scenarios: { type: 'string', default: 'chat-json,chat-stream,embeddings' },
      concurrency: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '20' },
      warmup: { type: 'string', default: '60' },
      rounds: { type: 'string', default: '3' },
      dimensions: { type: 'string', default: '1024' },
    },
  });
  const positive = (name: keyof typeof values) => {
    const value = Number(values[name]);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a number > 0, got ${values[name]}`);
    return value;
  };
  const scenarios = values.scenarios.split(',').filter(Boolean);
  const unknown = scenarios.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0)
    throw new Error(`--scenarios: unknown ${unknown.join(', ')} (known: ${Object.keys(SCENARIOS).join(', ')})`);
  return {
    scenarios,
    concurrency: positive('concurrency'),
    seconds: positive('seconds'),
    warmup: positive('warmup'),
    rounds: positive('rounds'),
    dimensions: positive('dimensions'),
  };
}

/**
 * Instructions callgrind counted since its last dump (which it zeroes): the newest dump file's
 * `summary:` line.
 */
async function dumpInstructions(pid: number, dir: string): Promise<number> {
  const before = new Set(await readdir(dir));
  await run('callgrind_control', ['--dump', String(pid)]);
  for (let waited = 0; waited < 60_000; waited += 200) {
    const added = (await readdir(dir)).filter((name) => !before.has(name) && name.startsWith('callgrind.out'));
    for (const name of added) {
      const summary = /^summary: (\d+)/m.exec(await readFile(path.join(dir, name), 'utf8'));
      if (summary) return Number(summary[1]);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('callgrind wrote no dump within 60 s');
}

async function main(): Promise<void> {
  const settings = readSettings();
  await run('callgrind_control', ['-h']).catch(() => {
    throw new Error('callgrind_control not found: install valgrind (Debian package valgrind)');
  });
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-instructions-'));
  const children: Child[] = [];
  try {
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    // --default-max-tokens: the Messages scenario's request has no ignore_eos; it is answered 64
    // tokens too.
    const simArgs = [
      '--port',
      String(simPort),
      '--model',
      'sim-chat',
      '--model',
      'sim-embed:embedding',
      '--ttft-ms',
      '0',
      '--itl-ms',
      '0',
      '--default-max-tokens',
      '64',
      // A context that holds the agent scenarios' 200 KB prompts (bench/agent-scenarios.ts).
      '--max-model-len',
      '262144',
    ];
    const sim = startBuilt(
      'simulator',
      'dist/sim/main.js',
      [...simArgs, '--embedding-dimensions', String(settings.dimensions)],
      { cwd: ROOT, env: cleanEnv() },
    );
    children.push(sim);
    await waitForHealth(sim, `${simUrl}/health`, 60_000);
    const enginesFile = path.join(tempDir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({ engines: ['sim-chat', 'sim-embed'].map((model) => ({ kind: 'static', model, url: simUrl })) }),
    );

    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const dumps = path.join(tempDir, 'dumps');
    await mkdir(dumps);
    const env = gatewayEnv({
      port,
      name: 'gateway',
      dataDir: path.join(tempDir, 'data'),
      enginesFile,
      databaseUrl: process.env.BENCH_DATABASE_URL,
      redisUrl: process.env.BENCH_REDIS_URL,
    });
    // --smc-check: V8 writes machine code into its heap, which valgrind must see as new code.
    const valgrind = [
      '--tool=callgrind',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${dumps}/callgrind.out.%p`,
      process.execPath,
      'dist/main.js',
    ];
    const gateway = startChild('gateway', 'valgrind', valgrind, { cwd: ROOT, env });
    children.push(gateway);
    await waitForHealth(gateway, `${url}/health`, 600_000);
    const secret = await provision(url, ADMIN_TOKEN);

    const lines = [
      `Tollgate instructions per request (callgrind, user space), ${settings.concurrency} connections, ${settings.rounds} windows of ${settings.seconds} s after ${settings.warmup} s of warm-up`,
      `store ${process.env.BENCH_DATABASE_URL ? 'postgres' : 'pglite'}, limits ${process.env.BENCH_REDIS_URL ? 'redis' : 'memory'}`,
    ];
    for (const name of settings.scenarios) {
      const scenario = SCENARIOS[name]!;
      const agent = createAgent(settings.concurrency);
      const target = { url: `${url}${scenario.path}`, headers: { authorization: `Bearer ${secret}` } };
      const slice = (seconds: number) =>
        runSlice(target, agent, {
          body: JSON.stringify(scenario.body),
          stream: scenario.stream,
          concurrency: settings.concurrency,
          durationMs: seconds * 1000,
        });
      process.stderr.write(`bench: ${name}: warming up …\n`);
      await slice(settings.warmup);
      await dumpInstructions(gateway.pid, dumps); // zeroes the counters
      const windows: string[] = [];
      const perRequest: number[] = [];
      for (let round = 0; round < settings.rounds; round++) {
        const result = await slice(settings.seconds);
        const instructions = await dumpInstructions(gateway.pid, dumps);
        const answered = result.samples.filter((sample) => sample.ok).length;
        const failed = result.samples.length - answered;
        if (answered === 0) throw new Error(`${name}: no request was answered (${failed} failed)`);
        perRequest.push(instructions / answered);
        windows.push(
          `    ${(instructions / answered / 1000).toFixed(0).padStart(6)} k instructions per request (${answered} answered${failed ? `, ${failed} FAILED` : ''})`,
        );
      }
      agent.destroy();
      // A window that caught a major collection or a recompilation counts more; the lowest is the
      // steadiest reading.
      lines.push(
        '',
        `  ${name}: lowest ${(Math.min(...perRequest) / 1000).toFixed(0)} k instructions per request`,
        ...windows,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await Promise.all(children.map((child) => child.stop()));
    await forgetGatewayKeys(process.env.BENCH_REDIS_URL);
    await rm(tempDir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
