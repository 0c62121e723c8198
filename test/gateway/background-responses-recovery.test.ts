import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backgroundResponses, usageRecords } from '../../src/shared/db/schema.js';
import { gatewayReplicas, type GatewayReplicas, type TestReplica } from '../helpers/gateway-replicas.js';
import { postgresAvailable } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();
if (!hasPostgres) console.warn('skipping background responses taken over: they need PostgreSQL');

/**
 * A replica that dies leaves its background responses claimed with a lease that runs out; another
 * replica on the same database takes them over: one the engine never had is run again, one it had
 * is failed and billed what it generated, under the request id it was queued with.
 */
describe.skipIf(!hasPostgres)('background responses of a replica that died', () => {
  let replicas: GatewayReplicas;
  let survivor: TestReplica;
  let tenant: { orgId: string; secret: string; keyId: string };

  beforeAll(async () => {
    replicas = await gatewayReplicas();
    // The replica that dies: it makes the catalog and the tenant, then stops.
    const first = replicas.first;
    tenant = await first.tenant({ credit: '10.00', key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 } });
    await first.close();
    survivor = await replicas.start({ TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS: '1000' });
  }, 60_000);

  afterAll(async () => {
    await replicas?.close();
  });

  /** A job as the dead replica left it: claimed by it, its lease run out a second ago. */
  async function leftBehind(fields: {
    reachedEngine: boolean;
    generatedTokens?: number;
    cachedTokens?: number;
    reasoningTokens?: number;
    streamed?: boolean;
  }) {
    const id = `resp_${randomBytes(24).toString('hex')}`;
    const requestId = `req_dead_${randomBytes(6).toString('hex')}`;
    const body: Json = { model: 'sim-chat', input: 'Say something.', background: true, stream: true };
    const now = Date.now();
    await survivor.services.db.insert(backgroundResponses).values({
      id,
      orgId: tenant.orgId,
      keyId: tenant.keyId,
      keyHash: survivor.services.keys.secretHashOf(`Bearer ${tenant.secret}`),
      requestId,
      request: JSON.stringify({ body, clientModel: 'sim-chat', projectId: null, band: 'default' }),
      status: fields.reachedEngine ? 'in_progress' : 'queued',
      response: JSON.stringify({ id, object: 'response', status: 'queued', output: [] }),
      streamed: fields.streamed ?? false,
      reachedEngine: fields.reachedEngine,
      promptTokens: fields.reachedEngine ? 11 : 0,
      generatedTokens: fields.generatedTokens ?? 0,
      cachedTokens: fields.cachedTokens ?? 0,
      reasoningTokens: fields.reasoningTokens ?? 0,
      claimedBy: 'dead-replica',
      leaseUntil: new Date(now - 1_000),
      createdAt: new Date(now - 5_000),
      expiresAt: new Date(now + 86_400_000),
    });
    return { id, requestId };
  }

  async function read(id: string): Promise<Json> {
    const answer = await fetch(`${survivor.url}/v1/responses/${id}`, {
      headers: { authorization: `Bearer ${tenant.secret}` },
    });
    expect(answer.status).toBe(200);
    return (await answer.json()) as Json;
  }

  async function recordsOf(requestId: string) {
    await survivor.services.applier.settled(10_000);
    return survivor.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
  }

  it('a job the engine never had is run again by the replica that finds it, and billed once', async () => {
    const { id, requestId } = await leftBehind({ reachedEngine: false });
    const done = await until(
      'the job is completed by the survivor',
      async () => {
        const response = await read(id);
        return response.status !== 'queued' && response.status !== 'in_progress' && response;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(done.status).toBe('completed');
    expect((done.output as Json[]).length).toBeGreaterThan(0);
    const [row] = await survivor.services.db.select().from(backgroundResponses).where(eq(backgroundResponses.id, id));
    expect(row!.claimedBy).toBe(survivor.services.backgroundResponses.replica);
    const records = await until('its charge is written', async () => {
      const found = await recordsOf(requestId);
      return found.length > 0 && found;
    });
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ status: 200, usageSource: 'upstream' });
  }, 30_000);

  it('a job the engine had is failed, billed what it generated under its request id', async () => {
    // The engine's running count as the dead replica kept it: of it, 4 prompt tokens cached, 20
    // generated tokens reasoning.
    const { id, requestId } = await leftBehind({
      reachedEngine: true,
      generatedTokens: 37,
      cachedTokens: 4,
      reasoningTokens: 20,
    });
    const failed = await until(
      'the job is failed by the survivor',
      async () => {
        const response = await read(id);
        return response.status === 'failed' && response;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(failed.error).toMatchObject({ code: 'server_error' });
    const records = await until('its charge is written', async () => {
      const found = await recordsOf(requestId);
      return found.length > 0 && found;
    });
    expect(records).toHaveLength(1);
    // Written as any record: the cached and reasoning tokens with the totals.
    expect(records[0]).toMatchObject({
      status: 500,
      promptTokens: 11,
      completionTokens: 37,
      cachedTokens: 4,
      reasoningTokens: 20,
    });
    expect((await survivor.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
  }, 30_000);
});
