import { eq, inArray } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineRequestId, newBatchId } from '../../src/gateway/batches/objects.js';
import { batches, batchLines } from '../../src/shared/db/batches-schema.js';
import { ledgerEntries, usageRecords } from '../../src/shared/db/schema.js';
import { chatLine, ended, resultLines } from '../helpers/batches.js';
import { gatewayReplicas, type GatewayReplicas, type TestReplica } from '../helpers/gateway-replicas.js';
import { postgresAvailable } from '../helpers/services.js';

const hasPostgres = await postgresAvailable();
if (!hasPostgres) console.warn('skipping batches taken over: they need PostgreSQL');

const LINES = 40;

/**
 * A replica that dies leaves its batch lines claimed with a lease that runs out; another replica
 * on the same database takes them over and runs them again under the same request ids: no line
 * lost, none billed twice (a line the dead replica had billed already is charged once).
 */
describe.skipIf(!hasPostgres)('batch lines of a replica that died', () => {
  let replicas: GatewayReplicas;
  let survivor: TestReplica;
  let tenant: { orgId: string; secret: string; keyId: string };

  beforeAll(async () => {
    replicas = await gatewayReplicas();
    // The replica that dies: it makes the catalog and the tenant, then stops.
    const first = replicas.first;
    tenant = await first.tenant({ credit: '10.00', key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 } });
    await first.close();
    survivor = await replicas.start({ TOLLGATE_BATCHES_LEASE_MS: '1000' });
  }, 60_000);

  afterAll(async () => {
    await replicas?.close();
  });

  it('takes over the lines of an expired lease: every line one result, each billed once', async () => {
    const { db, wallets } = survivor.services;
    const id = newBatchId();
    const now = Date.now();
    await db.insert(batches).values({
      id,
      orgId: tenant.orgId,
      projectId: null,
      keyId: tenant.keyId,
      keyHash: survivor.services.keys.secretHashOf(`Bearer ${tenant.secret}`),
      endpoint: '/v1/chat/completions',
      inputFileId: 'file-00000000000000000000000000000000',
      completionWindow: '24h',
      status: 'in_progress',
      total: LINES,
      createdAt: new Date(now - 5_000),
      expiresAt: new Date(now + 86_400_000),
      inProgressAt: new Date(now - 5_000),
    });
    // Half the lines running on the dead replica (its lease ran out a second ago), half waiting.
    await db.insert(batchLines).values(
      Array.from({ length: LINES }, (_, line) => ({
        batchId: id,
        line,
        customId: `dead-${line}`,
        url: '/v1/chat/completions',
        body: JSON.stringify(chatLine(line)),
        requestId: lineRequestId(id, line),
        status: line % 2 === 0 ? 'running' : 'waiting',
        claimedBy: line % 2 === 0 ? 'dead-replica' : null,
        leaseUntil: line % 2 === 0 ? new Date(now - 1_000) : null,
      })),
    );
    // The dead replica had billed line 0 before it died: its charge is in the books already.
    await wallets.chargeMany([
      {
        id: lineRequestId(id, 0),
        orgId: tenant.orgId,
        keyId: tenant.keyId,
        projectId: null,
        modelId: 'sim-chat',
        endpoint: 'chat.completions',
        promptTokens: 10,
        completionTokens: 5,
        cost: 1_000n,
        status: 200,
        streamed: false,
        usageSource: 'upstream',
        latencyMs: 5,
        batchId: id,
      },
    ]);
    const client = new OpenAI({ baseURL: `${survivor.url}/v1`, apiKey: tenant.secret, maxRetries: 0 });
    const batch = await ended(client, id, 40_000);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const results = await resultLines(client, batch.output_file_id);
    expect(results.map((line) => line.custom_id).sort()).toEqual(
      Array.from({ length: LINES }, (_, line) => `dead-${line}`).sort(),
    );
    await survivor.services.applier.settled(10_000);
    const ids = Array.from({ length: LINES }, (_, line) => lineRequestId(id, line));
    const records = await db.select().from(usageRecords).where(inArray(usageRecords.id, ids));
    expect(records).toHaveLength(LINES);
    const ledger = await db.select().from(ledgerEntries).where(inArray(ledgerEntries.requestId, ids));
    expect(ledger).toHaveLength(LINES);
    const first = ledger.filter((entry) => entry.requestId === lineRequestId(id, 0));
    expect(first).toEqual([expect.objectContaining({ amount: -1_000n })]);
    const [row] = await db.select().from(batchLines).where(eq(batchLines.batchId, id)).limit(1);
    expect(row!.claimedBy).toBeNull();
  }, 60_000);
});
