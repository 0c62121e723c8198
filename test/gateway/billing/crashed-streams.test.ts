import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import {
  billedReplicas,
  type BilledReplicas,
  type StreamProtocol,
  watchStream,
  type WatchedStream,
} from '../../helpers/billed-replicas.js';
import type { GatewayProcess } from '../../helpers/processes.js';
import { scrape } from '../../helpers/prometheus.js';
import { postgresAndRedisOrSkip, redisHolds } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * A hard crash bills what was generated: two replicas on PostgreSQL and
 * Redis, six long streams (chat, Responses, Messages) on replica 1, which is
 * SIGKILLed mid-stream and started again on its data folder. Each stream is
 * billed for at least what its client had received, less two checkpoints' intervals;
 * the wallet is the sum of the usage records; and streams that end normally
 * are charged once, for their final usage, though they were checkpointed.
 */

const ready = await postgresAndRedisOrSkip('the crashed-stream tests');

const ADMIN_TOKEN = 'crashed-streams-operator-token-0123';
/** The checkpoint interval the replicas run with: a crash loses at most two of them of each stream. */
const EVERY_TOKENS = 20;
const CREDIT = 100_000_000_000n; // 100.00
const PROMPT = 'a long agent prompt '.repeat(400);

describe.skipIf(!ready)('streams on a SIGKILLed replica are billed from their checkpoints', () => {
  let sim: RunningSimulator;
  let fleet: BilledReplicas;
  let sql: BilledReplicas['sql'];

  const start = (name: string) => fleet.start(name);
  const admin = <T>(gateway: GatewayProcess, method: string, route: string, body?: unknown) =>
    fleet.admin<T>(gateway, method, route, body);
  const watch = (gateway: GatewayProcess, secret: string, protocol: StreamProtocol, max: number) =>
    watchStream(gateway, secret, protocol, max, PROMPT);

  beforeAll(async () => {
    // 10 ms a token, and answers as long as asked: a stream of 3,000 tokens runs for 30 s.
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 16_384 }],
      itlMs: 10,
      defaultMaxTokens: 10_000,
    });
    fleet = await billedReplicas({
      adminToken: ADMIN_TOKEN,
      simUrl: sim.url,
      env: {
        TOLLGATE_STREAM_CHECKPOINT_TOKENS: String(EVERY_TOKENS),
        TOLLGATE_STREAM_CHECKPOINT_MS: '600000',
        // The holds of the killed replica's streams expire within a lease and a second: a short
        // one, so the test sees it.
        TOLLGATE_HOLD_LEASE_MS: '2000',
      },
    });
    sql = fleet.sql;
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  const recordsOf = (orgId: string) =>
    sql<
      Array<{ id: string; prompt_tokens: number; completion_tokens: number; cost_nanos: string; status: number }>
    >`select id, prompt_tokens, completion_tokens, cost_nanos::text, status from usage_records where org_id = ${orgId}`;

  it('bills each cut stream at least what its client received, less two checkpoints; the wallet is the records; a normal end is charged once', async () => {
    const one = await start('one');
    const two = await start('two');
    await fleet.addSimChat(one);
    const org = await admin<{ id: string }>(one, 'POST', '/orgs', { name: 'crashed streams' });
    await admin(one, 'POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
    const key = await admin<{ secret: string }>(one, 'POST', `/orgs/${org.id}/keys`, {
      name: 'agent',
      max_concurrency: 50,
    });

    // Streams that end normally, checkpointed on the way (60 tokens: three checkpoints and more),
    // one per protocol on each replica.
    const finished: WatchedStream[] = [];
    for (const protocol of ['chat', 'responses', 'messages'] as const)
      for (const gateway of [one, two]) finished.push(await watch(gateway, key.secret, protocol, 3 * EVERY_TOKENS));
    await Promise.all(finished.map((w) => w.ended));

    // Six long streams on replica one, cut by its SIGKILL once each client has read a good part.
    const cut: WatchedStream[] = [];
    for (const protocol of ['chat', 'chat', 'responses', 'responses', 'messages', 'messages'] as const)
      cut.push(await watch(one, key.secret, protocol, 3_000));
    await until(
      'every client has read five checkpoints’ worth',
      () => cut.every((w) => w.received >= 5 * EVERY_TOKENS),
      {
        timeout: 20_000,
        interval: 20,
      },
    );
    await fleet.kill(one);
    await Promise.all(cut.map((w) => w.ended));

    // Replica one starts again on its data folder and charges what its journal holds.
    const again = await start('one');
    await until(
      'the restarted replica has written its journal',
      async () => (await scrape(`${again.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth') === 0,
      { timeout: 20_000, interval: 200 },
    );
    const records = new Map((await recordsOf(org.id)).map((r) => [r.id, r]));

    for (const stream of cut) {
      const record = records.get(stream.requestId);
      expect(record, `${stream.protocol} stream ${stream.requestId} is billed`).toBeDefined();
      expect(record!.status).toBe(500);
      // At least what the client had, less the interval since the last checkpoint on disk and, if
      // the process died while writing one, the interval before it (docs/billing.md, "What a crash
      // loses of a stream").
      expect(record!.completion_tokens).toBeGreaterThanOrEqual(stream.received - 2 * EVERY_TOKENS);
      expect(record!.prompt_tokens).toBeGreaterThan(1_000);
      if (stream.promptSeen !== null) expect(record!.prompt_tokens).toBe(stream.promptSeen);
      expect(BigInt(record!.cost_nanos)).toBeGreaterThan(0n);
    }
    for (const stream of finished) {
      const record = records.get(stream.requestId);
      expect(record, `${stream.protocol} stream ${stream.requestId} is billed`).toBeDefined();
      expect(record!.status).toBe(200);
      expect([record!.completion_tokens, stream.received]).toEqual([3 * EVERY_TOKENS, 3 * EVERY_TOKENS]);
    }
    expect(records.size).toBe(cut.length + finished.length);

    // One charge per record in the ledger, and the wallet is the credit less the records.
    const charges = await sql<Array<{ request_id: string; n: number }>>`
      select request_id, count(*)::int as n from ledger_entries where org_id = ${org.id} and kind = 'charge' group by request_id`;
    expect(charges).toHaveLength(records.size);
    expect(charges.every((c) => c.n === 1)).toBe(true);
    const spent = [...records.values()].reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
    const [wallet] = await sql<Array<{ balance: string }>>`
      select balance_nanos::text as balance from wallets where org_id = ${org.id}`;
    expect(BigInt(wallet!.balance)).toBe(CREDIT - spent);
    // The killed streams' holds are given back (they expire), as for any dead process.
    await until('no hold of the killed streams is left', async () => (await redisHolds(fleet.prefix, org.id)) === 0, {
      timeout: 10_000,
      interval: 200,
    });
  }, 120_000);
});
