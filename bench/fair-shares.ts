import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { cleanEnv } from './gateway-env.js';
import { FLOW_BENCH_ADMIN, addSimChat, admin, healthy, key, org, sleep, spread, stream } from './flow-bench.js';
import { freePort, startBuilt, type Child } from './processes.js';

/**
 * Issue 67: two organizations kept backlogged on a saturated fleet get the weighted tokens their
 * share weights say. Two loaded-simulator replicas of 8 sequences; organization L sends long
 * prompts (about `LONG_PROMPT` tokens) for short answers (16 tokens), organization S short prompts
 * for long answers (`LONG_ANSWER` tokens); each keeps `BACKLOG` streams in flight, so both always
 * wait. For `SECONDS` after a warm-up, the tokens the gateway served each (`GET /admin/v1/flow`,
 * input weighted 1 and output 2, as flow control weighs them) are compared: with equal weights they
 * should be within 10 % of each other; with L's weight 2, within 10 % of 2:1. Weights 1:1 and 2:1
 * in turn for `SITTINGS` sittings.
 *
 * @example
 * npm run build && SECONDS=60 SITTINGS=3 npx tsx bench/fair-shares.ts
 */
const SECONDS_EACH = Number(process.env.SECONDS ?? 60);
const SITTINGS = Number(process.env.SITTINGS ?? 1);
const BACKLOG = Number(process.env.BACKLOG ?? 40);
const LONG_PROMPT = Number(process.env.LONG_PROMPT ?? 2000);
const LONG_ANSWER = Number(process.env.LONG_ANSWER ?? 300);
const SIM_ARGS = ['--max-num-seqs', '8', '--decode-ms-per-step', '10', '--prefill-ms-per-token', '0.01'];

interface Served {
  org_id: string;
  prompt_tokens: number;
  completion_tokens: number;
}

async function main(): Promise<void> {
  const sims: Child[] = [];
  const urls: string[] = [];
  for (const i of [0, 1]) {
    const port = await freePort();
    const args = ['sim-chat', '--host', '127.0.0.1', '--port', String(port), '--max-model-len', '8192', ...SIM_ARGS];
    sims.push(startBuilt(`sim-${i}`, 'dist/sim/main.js', args, { cwd: process.cwd(), env: cleanEnv() }));
    await healthy(`http://127.0.0.1:${port}`);
    urls.push(`http://127.0.0.1:${port}/v1`);
  }
  const ratios: Record<'1:1' | '2:1', number[]> = { '1:1': [], '2:1': [] };
  try {
    for (let s = 0; s < SITTINGS; s++) {
      for (const weights of ['1:1', '2:1'] as const) {
        const ratio = await sitting(urls, weights === '2:1' ? 2 : 1);
        console.log(`sitting ${s + 1}, weights ${weights}: L's weighted tokens over S's ${ratio.toFixed(3)}`);
        ratios[weights].push(ratio);
      }
    }
  } finally {
    await Promise.all(sims.map((sim) => sim.stop()));
  }
  for (const weights of ['1:1', '2:1'] as const) {
    console.log(`weights ${weights}: L over S ${spread(ratios[weights], 3)} (median (spread) of ${SITTINGS})`);
  }
}

/**
 * One gateway, L with `weightL` and S with 1, both backlogged: L's weighted tokens over S's in the
 * window.
 */
async function sitting(urls: string[], weightL: number): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-fair-shares-'));
  const engines = path.join(dir, 'engines.json');
  await writeFile(
    engines,
    JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', engine: 'vllm', urls, max_num_seqs: 8 }] }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = startBuilt('gateway', 'dist/main.js', [], {
    cwd: process.cwd(),
    env: cleanEnv({
      PORT: String(port),
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: dir,
      TOLLGATE_ADMIN_TOKEN: FLOW_BENCH_ADMIN,
      TOLLGATE_ENGINES_FILE: engines,
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_LOG_LEVEL: 'error',
    }),
  });
  try {
    await healthy(url);
    await addSimChat(url);
    const long = await org(url, 'L');
    const short = await org(url, 'S');
    await admin(url, 'PATCH', `/orgs/${long}`, { share_weight: weightL });
    const longKey = await key(url, long, BACKLOG);
    const shortKey = await key(url, short, BACKLOG);
    const longPrompt = 'word '.repeat(LONG_PROMPT);
    let running = true;
    const streams = Array.from({ length: BACKLOG * 2 }, async (_, i) => {
      while (running) {
        if (i % 2 === 0) await stream(url, longKey, 16, longPrompt);
        else await stream(url, shortKey, LONG_ANSWER);
      }
    });
    // Both backlogged before the window opens.
    await sleep(10_000);
    const before = await servedOf(url);
    await sleep(SECONDS_EACH * 1000);
    const after = await servedOf(url);
    running = false;
    await Promise.all(streams);
    const weighted = (orgId: string) => {
      const end = after.get(orgId);
      const start = before.get(orgId);
      if (!end) return 0;
      return (
        end.prompt_tokens - (start?.prompt_tokens ?? 0) + 2 * (end.completion_tokens - (start?.completion_tokens ?? 0))
      );
    };
    return weighted(long) / weighted(short);
  } finally {
    await gateway.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The tokens the gateway served each organization so far (its flow control's count). */
async function servedOf(url: string): Promise<Map<string, Served>> {
  const response = await fetch(`${url}/admin/v1/flow`, { headers: { authorization: `Bearer ${FLOW_BENCH_ADMIN}` } });
  const body = (await response.json()) as { served: Served[] };
  return new Map(body.served.map((served) => [served.org_id, served]));
}

await main();
