import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAmount } from '../../src/gateway/billing/money.js';
import { backgroundResponses, usageRecords } from '../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { batchFile, ended, resultLines, startBatch } from '../helpers/batches.js';
import { TEST_GATEWAY_ENV, type TestGateway } from '../helpers/gateway.js';
import { gatewayReplicas, type GatewayReplicas, type TestReplica } from '../helpers/gateway-replicas.js';
import { postgresAvailable } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();

/** A token every ITL_MS, ANSWER_TOKENS of them: an answer takes about 12 s. */
const ITL_MS = 20;
const ANSWER_TOKENS = 600;
/** What the engine generates for one call in a second. */
const TOKENS_A_SECOND = 1_000 / ITL_MS;
/** Lines each replica claims at once, and the engine's room: some claimed lines wait for it. */
const CONCURRENCY = 8;
const ENGINE_SEQS = 4;
const LINES = 24;

const longLine = (i: number): Json => ({
  model: 'sim-chat',
  max_tokens: ANSWER_TOKENS,
  // The simulator's answer ends after 16 tokens unless told to go on to the limit.
  ignore_eos: true,
  messages: [{ role: 'user', content: `Tell a long story, number ${i}` }],
});

/**
 * An organization's wallet spent (an operator's adjustment to zero, on one replica) while its batch
 * and a background response run on two replicas: every running engine call of the organization
 * stops within about a second, on both replicas, and is billed what it used; claimed lines not
 * yet sent end as error lines `insufficient_quota`, billed nothing. Bounded by the tokens the
 * engine generates after the spend, not by the time things took.
 */
describe.skipIf(!hasPostgres)('a wallet spent while its batch and a background response run', () => {
  let sim: RunningSimulator;
  let replicas: GatewayReplicas;
  let one: TestGateway;
  let two: TestReplica;
  let client: OpenAI;
  let orgId: string;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat' }],
      itlMs: ITL_MS,
      defaultMaxTokens: ANSWER_TOKENS,
    });
    replicas = await gatewayReplicas({
      // As a replica (`urls`): its room counted, so lines claimed beyond it wait in the gateway.
      engines: [{ kind: 'static', model: 'sim-chat', urls: [sim.url], max_num_seqs: ENGINE_SEQS }],
      // One organization takes every slot (no headroom kept for another's next request): the
      // engine's room is what the lines fill.
      env: { TOLLGATE_BATCHES_CONCURRENCY: String(CONCURRENCY), TOLLGATE_FLOW_SHARE_HEADROOM: '0' },
    });
    one = replicas.first;
    const tenant = await one.tenant({ credit: '50.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } });
    orgId = tenant.orgId;
    client = new OpenAI({ baseURL: one.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    two = await replicas.start();
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
    await sim?.close();
  });

  it('stops every running call of the organization and fails the lines not yet sent, billed nothing', async () => {
    const { db } = one.services;
    const background = await client.responses.create({ model: 'sim-chat', input: 'Write.', background: true });
    const generated = async () =>
      (await db.select().from(backgroundResponses).where(eq(backgroundResponses.id, background.id)))[0]!
        .generatedTokens;
    const batch = await startBatch(client, batchFile(LINES, '/v1/chat/completions', longLine), '/v1/chat/completions');
    await until(
      'both replicas run lines, and the engine is busy',
      async () =>
        one.services.batches.runner.size > 0 &&
        two.services.batches.runner.size > 0 &&
        sim.stats().running >= ENGINE_SEQS &&
        (await generated()) >= 20,
      { timeout: 60_000, interval: 20 },
    );

    // Spent on the second replica, through the operator API: its balance taken to zero.
    const balance = await one.services.wallets.balance(orgId);
    const atSpend = sim.stats();
    const backgroundBefore = await generated();
    const adjusted = await fetch(`${two.url}/admin/v1/orgs/${orgId}/wallet/adjustments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_GATEWAY_ENV.TOLLGATE_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: `-${formatAmount(balance)}`, note: 'chargeback' }),
    });
    expect(adjusted.status).toBe(201);

    await until(
      'no replica runs a line and the background response has ended',
      async () =>
        one.services.batches.runner.size === 0 &&
        two.services.batches.runner.size === 0 &&
        (await client.responses.retrieve(background.id)).status !== 'in_progress',
      // Long enough for calls that are not stopped to run to their end (the old code's way).
      { timeout: 150_000, interval: 50 },
    );
    // Each call running at the spend went on for at most about a second (a poll of its wallet and
    // the abort reaching the engine); a line the engine never had never reached it.
    const extra = sim.stats().generationTokens - atSpend.generationTokens;
    expect(extra).toBeLessThanOrEqual((atSpend.running + 1) * TOKENS_A_SECOND);

    const done = await ended(client, batch.id);
    expect(done.request_counts).toMatchObject({ total: LINES, completed: 0, failed: LINES });
    const errors = await resultLines(client, done.error_file_id);
    expect(errors).toHaveLength(LINES);
    for (const line of errors) expect((line.error as Json).code).toBe('insufficient_quota');
    // Lines cut at the engine show what they were billed; those never sent were billed nothing.
    const cut = errors.filter((line) => line.response !== null);
    const unsent = errors.filter((line) => line.response === null);
    expect(unsent.length).toBeGreaterThan(0);
    await Promise.all([one.charged(20_000), two.charged(20_000)]);
    const records = await db.select().from(usageRecords).where(eq(usageRecords.batchId, batch.id));
    expect(records.map((record) => record.id).sort()).toEqual(
      cut.map((line) => (line.response as { request_id: string }).request_id).sort(),
    );
    for (const record of records) {
      expect(record.status).toBe(499);
      expect(record.completionTokens).toBeLessThan(ANSWER_TOKENS);
    }

    // The background response is stopped too, billed what the engine generated.
    const stopped = await client.responses.retrieve(background.id);
    expect(stopped.status).toBe('cancelled');
    const [record] = await db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.orgId, orgId))
      .then((rows) => rows.filter((row) => row.batchId === null));
    expect(record!.completionTokens).toBeGreaterThanOrEqual(backgroundBefore);
    expect(record!.completionTokens).toBeLessThan(ANSWER_TOKENS);
  }, 240_000);
});
