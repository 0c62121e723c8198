import { hostname } from 'node:os';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { fundedKey } from '../helpers/background-kills.js';
import { batchFile, ended, resultLines, startBatch } from '../helpers/batches.js';
import { billedReplicas, type BilledReplicas } from '../helpers/billed-replicas.js';
import { catalogSeenBy, type GatewayProcess } from '../helpers/processes.js';
import { postgresAvailable, redisAvailable } from '../helpers/services.js';
import { libfaketime, recordingProxy, skewedClock } from '../helpers/skewed-clocks.js';
import { skippedWithout } from '../helpers/skips.js';
import { until } from '../helpers/wait.js';

/**
 * Leases on the database's clock (issue 78, item 3): two real gateway processes on one database,
 * one ten minutes fast and one ten minutes slow (libfaketime). A batch through both runs each line
 * once at the engine; a background response running on the slow one is not taken over by the fast
 * one while it lives; the fast one SIGKILLed, its claimed lines are taken over once the lease has
 * run out on the database's clock, not ten minutes later.
 */

const [hasPostgres, hasRedis] = await Promise.all([postgresAvailable(), redisAvailable()]);
const library = libfaketime();
const missing =
  !hasPostgres || !hasRedis
    ? 'replicas with clocks off need PostgreSQL and Redis'
    : library === null
      ? 'replicas with clocks off need libfaketime (apt-get install faketime)'
      : null;

const ADMIN_TOKEN = 'lease-clock-skew-operator-token-0123';
const LEASE_MS = 2_000;
const LINES = 24;
const LINE_TOKENS = 40;
const BACKGROUND_TOKENS = 300;
const ITL_MS = 20;

const line = (i: number) => ({
  model: 'sim-chat',
  max_tokens: LINE_TOKENS,
  ignore_eos: true,
  messages: [{ role: 'user', content: `Question number ${i}` }],
});

/** `claimed_by` of a replica's rows: its host and its process. */
const holderOf = (gateway: GatewayProcess) => `${hostname()}:${gateway.child.pid}:`;

describe.skipIf(missing !== null)('replicas whose clocks are ten minutes off, on one database', () => {
  let sim: RunningSimulator;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let fleet: BilledReplicas;
  let slow: GatewayProcess;
  let fast: GatewayProcess;
  let client: OpenAI;
  let call: Awaited<ReturnType<typeof fundedKey>>['call'];

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 16_384 }],
      itlMs: ITL_MS,
      defaultMaxTokens: BACKGROUND_TOKENS,
    });
    proxy = await recordingProxy(sim.url);
    fleet = await billedReplicas({
      adminToken: ADMIN_TOKEN,
      simUrl: proxy.url,
      engine: { urls: [proxy.url] },
      env: {
        TOLLGATE_BATCHES_LEASE_MS: String(LEASE_MS),
        TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS: String(LEASE_MS),
        TOLLGATE_BATCHES_CONCURRENCY: '4',
      },
    });
    slow = await fleet.start('slow', skewedClock(library!, '-10m'));
    fast = await fleet.start('fast', skewedClock(library!, '+10m'));
    await fleet.addSimChat(slow);
    await catalogSeenBy(fast, slow, ADMIN_TOKEN);
    const key = await fundedKey(fleet, slow, 'clocks off');
    call = key.call;
    client = new OpenAI({ baseURL: `${fast.url}/v1`, apiKey: key.secret, maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    await fleet?.close();
    await proxy?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  it('the replicas really run ten minutes apart', async () => {
    const dates = await Promise.all(
      [slow, fast].map(async (g) => Date.parse((await fetch(`${g.url}/health`)).headers.get('date')!)),
    );
    expect(dates[1]! - dates[0]!).toBeGreaterThan(19 * 60_000);
  });

  it('runs each line of a batch once, and leaves the slow one its background response', async () => {
    const { sql } = fleet;
    const answer = await call(slow, '/responses', { model: 'sim-chat', input: 'A long story', background: true });
    expect(answer.status).toBe(200);
    const { id } = (await answer.json()) as { id: string };
    const batch = await startBatch(client, batchFile(LINES, '/v1/chat/completions', line), '/v1/chat/completions');

    const jobHolders = new Set<string>();
    const lineHolders = new Set<string>();
    const job = await until(
      'the background response ends',
      async () => {
        const [row] = await sql<Array<{ status: string; claimed_by: string }>>`
          select status, claimed_by from background_responses where id = ${id}`;
        jobHolders.add(row!.claimed_by);
        const lines = await sql<Array<{ claimed_by: string }>>`
          select distinct claimed_by from batch_lines where batch_id = ${batch.id} and claimed_by is not null`;
        for (const { claimed_by } of lines) lineHolders.add(claimed_by);
        return !['queued', 'in_progress'].includes(row!.status) && row!;
      },
      { timeout: 40_000, interval: 50 },
    );
    const finished = await ended(client, batch.id, 60_000);
    // Each line reached the engine once, whichever replica ran it.
    const sentTimes = Array.from(
      { length: LINES },
      (_, i) => proxy.sent.filter((body) => body.includes(`"Question number ${i + 1}"`)).length,
    );
    expect(sentTimes).toEqual(Array.from({ length: LINES }, () => 1));
    expect(job.status, 'the background response ran to its end on the slow replica').toBe('completed');
    expect([...jobHolders].every((holder) => holder.startsWith(holderOf(slow)))).toBe(true);
    expect(finished.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const results = await resultLines(client, finished.output_file_id);
    expect(results.map((result) => result.custom_id).sort()).toEqual(
      Array.from({ length: LINES }, (_, i) => `req-${i + 1}`).sort(),
    );
    const holders = [...lineHolders];
    expect(
      holders.some((holder) => holder.startsWith(holderOf(fast))),
      'the fast replica ran lines',
    ).toBe(true);
  }, 120_000);

  it("takes a killed fast replica's lines over once their lease runs out on the database's clock", async () => {
    const { sql } = fleet;
    const batch = await startBatch(
      client,
      batchFile(LINES, '/v1/chat/completions', line, 'kill'),
      '/v1/chat/completions',
    );
    const held = await until(
      'the fast replica holds running lines',
      async () => {
        const rows = await sql<Array<{ line: number; left_ms: number }>>`
          select line, extract(epoch from lease_until - now()) * 1000 as left_ms from batch_lines
          where batch_id = ${batch.id} and status = 'running' and claimed_by like ${`${holderOf(fast)}%`}`;
        return rows.length >= 2 && rows;
      },
      { timeout: 30_000, interval: 20 },
    );
    // Its leases end a lease from now on the database's clock, not ten minutes later.
    expect(Math.max(...held.map((row) => Number(row.left_ms)))).toBeLessThanOrEqual(LEASE_MS + 500);
    await fleet.kill(fast);
    const killedAt = Date.now();
    await until(
      "the killed replica's lines are taken over",
      async () => {
        const [row] = await sql<Array<{ n: number }>>`
          select count(*)::int as n from batch_lines
          where batch_id = ${batch.id} and claimed_by like ${`${holderOf(fast)}%`}`;
        return row!.n === 0;
      },
      { timeout: 30_000, interval: 50 },
    );
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + 5_000);
    const onSlow = new OpenAI({ baseURL: `${slow.url}/v1`, apiKey: client.apiKey, maxRetries: 0 });
    const finished = await ended(onSlow, batch.id, 60_000);
    expect(finished.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
  }, 120_000);
});

skippedWithout(missing);
