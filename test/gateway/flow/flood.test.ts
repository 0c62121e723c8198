import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { sleep, until } from '../../helpers/wait.js';

/**
 * Issue 67: one organization's flood, within its own limits, must not starve
 * another's. Two loaded-simulator replicas of 4 sequences each (8 in all), A
 * keeps 40 streams of 200 tokens in flight (2 s each when running) over two
 * keys; B sends one short stream every 300 ms. Without flow control the
 * engines queue A's 32 extra streams first come first served, and B waits
 * behind them (about 8 s at p50 when this was written: 8.4 s with
 * TOLLGATE_FLOW_CONTROL=off); with it, A's extra streams wait in the gateway
 * and B, served the fewest tokens, takes the next free slot (a slot frees
 * about every 250 ms). The second case puts A's keys in the `batch` band (a
 * nightly job's), B staying in `default`: B goes first as it did, by band now.
 */

const SIM_ARGS = ['--max-num-seqs', '4', '--decode-ms-per-step', '10', '--prefill-ms-per-token', '0.01'];
const FLOOD = 40;
const B_REQUESTS = 12;

const sims: TestChild[] = [];
let gateway: TestGateway;
let dir: string;

beforeAll(async () => {
  const urls = await Promise.all(
    [0, 1].map(async (i) => {
      const port = await freePort();
      const child = startBuilt(
        `sim-flood-${i}`,
        'dist/sim/main.js',
        ['sim-chat', '--host', '127.0.0.1', '--port', String(port), ...SIM_ARGS],
        { cwd: repoRoot, env: process.env },
      );
      sims.push(child);
      await waitForHealth(child, `http://127.0.0.1:${port}/health`);
      return `http://127.0.0.1:${port}/v1`;
    }),
  );
  dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-flood-'));
  const file = path.join(dir, 'engines.json');
  const engine = { kind: 'static', model: 'sim-chat', engine: 'vllm', urls, max_num_seqs: 4 };
  await writeFile(file, JSON.stringify({ engines: [engine] }));
  gateway = await startTestGateway('pglite', {
    TOLLGATE_ENGINES_FILE: file,
    TOLLGATE_ROUTING_SCRAPE_MS: '100',
    TOLLGATE_ENGINE_POLL_MS: '200',
  });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await Promise.all(sims.map((child) => child.stop('SIGTERM')));
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Sends one streamed chat; resolves with the ms to its first content chunk once the stream has
 * ended.
 */
async function stream(secret: string, maxTokens: number): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Say something.' }],
      max_tokens: maxTokens,
      // The simulator's answers end on their own after a few tokens; a flood's run their whole
      // length.
      ignore_eos: true,
      stream: true,
    }),
  });
  expect(response.status).toBe(200);
  let firstToken: number | null = null;
  const decoder = new TextDecoder();
  for await (const bytes of response.body!) {
    if (firstToken === null && decoder.decode(bytes).includes('"content":"')) firstToken = performance.now() - started;
  }
  return firstToken ?? Infinity;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.ceil(p * values.length) - 1]!;

/**
 * A keeps FLOOD streams in flight over its two keys while B sends B_REQUESTS short ones at its
 * pace; answers B's first-token times, the fleet's requests in flight while A flooded, and who
 * waited in which band.
 */
async function floodWith(a: { orgId: string; secrets: string[] }, bSecret: string) {
  let flooding = true;
  const flood = Array.from({ length: FLOOD }, async (_, i) => {
    while (flooding) await stream(a.secrets[i % a.secrets.length]!, 200);
  });
  await until('the fleet is full and A waits in the gateway', () => gateway.services.flow.waiting(a.orgId) >= 20);
  const waiting = gateway.services.flow.snapshot().models[0]!.waiting;
  const times: number[] = [];
  for (let i = 0; i < B_REQUESTS; i++) {
    times.push(await stream(bSecret, 20));
    // B's pace: a trickle, the subject of the test.
    await sleep(300);
  }
  const inFlight = gateway.services.flow.snapshot().models[0]!.inFlight;
  flooding = false;
  await Promise.all(flood);
  return { times, inFlight, waiting, figures: `B's first token ms: ${times.map((t) => t.toFixed(0)).join(', ')}` };
}

/** An organization of two keys that may keep the whole flood in flight, in `band`. */
async function flooder(band: 'default' | 'batch') {
  const key = { maxConcurrency: 32, requestsPerMinute: 10_000, band } as const;
  const a = await gateway.tenant({ key });
  const second = await gateway.services.keys.create({ orgId: a.orgId, name: 'second', ...key });
  return { orgId: a.orgId, secrets: [a.secret, second.secret] };
}

describe("a tenant's flood on a saturated fleet", () => {
  it("leaves another organization's first token within a slot's turn, and A keeps the whole fleet", async () => {
    await until('both replicas are ready', () =>
      gateway.services.fleet.status()[0]!.replicas.every((replica) => replica.state === 'ready'),
    );
    const a = await flooder('default');
    const b = await gateway.tenant({ key: { maxConcurrency: 4, requestsPerMinute: 1_000 } });
    const { times, inFlight, figures } = await floodWith(a, b.secret);
    console.info(`default-band flood: ${figures}`);
    // Without flow control B waits behind A's whole queue (about 8 s); with it, a slot's turn. The
    // bound leaves room for a CI machine running two suites at once.
    expect(percentile(times, 0.9), figures).toBeLessThan(4_000);
    // Work-conserving: the fleet's 8 sequences were all A's or B's while A flooded, never more.
    expect(inFlight).toBeLessThanOrEqual(8);
    await gateway.charged(15_000);
  }, 120_000);

  it("leaves a default-band tenant's first token as close when the flood's keys are in the batch band", async () => {
    await until('both replicas are ready', () =>
      gateway.services.fleet.status()[0]!.replicas.every((replica) => replica.state === 'ready'),
    );
    const a = await flooder('batch');
    const b = await gateway.tenant({ key: { maxConcurrency: 4, requestsPerMinute: 1_000 } });
    const { times, inFlight, waiting, figures } = await floodWith(a, b.secret);
    console.info(`batch-band flood: ${figures}`);
    // A's flood waited in the batch band, the band every default request goes before.
    expect(waiting.filter((w) => w.orgId === a.orgId).map((w) => w.band)).toEqual(['batch']);
    // The same bound as the default-band flood above.
    expect(percentile(times, 0.9), figures).toBeLessThan(4_000);
    expect(inFlight).toBeLessThanOrEqual(8);
    await gateway.charged(15_000);
  }, 120_000);
});
