import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backgroundResponses, usageRecords } from '../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { gatewayReplicas, type GatewayReplicas, type TestReplica } from '../helpers/gateway-replicas.js';
import type { TestGateway } from '../helpers/gateway.js';
import { postgresAvailable } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();

/** A token every ITL_MS, ANSWER_TOKENS of them: an answer takes about 10 s. */
const ITL_MS = 10;
const ANSWER_TOKENS = 1_000;
/** What the engine generates in a second, and in the quarter second the job's kept count may lag. */
const TOKENS_A_SECOND = 1_000 / ITL_MS;
const KEPT_COUNT_LAG = 250 / ITL_MS;

/**
 * A background response cancelled on the replica its client reached, while it runs on another:
 * the engine stops within a second of the cancel, not at the running replica's next lease renewal.
 */
describe.skipIf(!hasPostgres)('a background response cancelled on another replica', () => {
  let sim: RunningSimulator;
  let replicas: GatewayReplicas;
  let runner: TestGateway;
  let other: TestReplica;
  let secret: string;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat' }],
      itlMs: ITL_MS,
      defaultMaxTokens: ANSWER_TOKENS,
    });
    replicas = await gatewayReplicas({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] });
    // The replica that runs it makes the catalog and the tenant; the other shares its database.
    runner = replicas.first;
    ({ secret } = await runner.tenant({ credit: '50.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } }));
    other = await replicas.start();
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
    await sim?.close();
  });

  const call = (base: string, route: string, body?: Json) =>
    fetch(`${base}/v1${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: body && JSON.stringify(body),
    });

  it('stops the engine within a second of the cancel, and bills what it generated', async () => {
    const created = await call(runner.url, '/responses', { model: 'sim-chat', input: 'Write.', background: true });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    const requestId = created.headers.get('x-request-id')!;
    const { db } = runner.services;
    const generated = async () =>
      (await db.select().from(backgroundResponses).where(eq(backgroundResponses.id, id)))[0]!.generatedTokens;
    await until('the engine has generated a few tokens', async () => (await generated()) >= 50, {
      timeout: 30_000,
      interval: 20,
    });
    const before = await generated();
    const cancelled = await call(other.url, `/responses/${id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(((await cancelled.json()) as Json).status).toBe('cancelled');
    await runner.charged(20_000);
    const [record] = await db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
    // Billed what the engine generated (its running count), which stopped soon after the cancel.
    expect(record!.completionTokens).toBeGreaterThanOrEqual(before);
    expect(record!.completionTokens - before).toBeLessThanOrEqual(TOKENS_A_SECOND + KEPT_COUNT_LAG);
  }, 90_000);
});
