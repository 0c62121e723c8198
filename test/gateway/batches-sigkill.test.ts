import { hostname } from 'node:os';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineRequestId } from '../../src/gateway/batches/objects.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { batchFile, ended, resultLines, startBatch } from '../helpers/batches.js';
import { billedReplicas, type BilledReplicas } from '../helpers/billed-replicas.js';
import { postgresAndRedisOrSkip, redisHolds } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

/**
 * A batch under a real SIGKILL (issue 72): the replica holding its lines' claims is killed mid-run
 * (no drain, no flush) and started again on its data folder. The batch completes: every custom_id
 * has exactly one result line, each line's request id one usage record and one charge, the wallet
 * is the credit less the records, and no hold is left.
 */

const ready = await postgresAndRedisOrSkip('the SIGKILLed batch test');

const ADMIN_TOKEN = 'batches-sigkill-operator-token-0123';
const LINES = 24;
/** Tokens each line asks for, one every ITL_MS: a line runs about 0.8 s on the engine. */
const LINE_TOKENS = 40;
const ITL_MS = 20;
const CREDIT = 100_000_000_000n; // 100.00

describe.skipIf(!ready)('a batch whose replica is SIGKILLed mid-run', () => {
  let sim: RunningSimulator;
  let fleet: BilledReplicas;

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 16_384 }], itlMs: ITL_MS });
    fleet = await billedReplicas({
      adminToken: ADMIN_TOKEN,
      simUrl: sim.url,
      env: {
        TOLLGATE_BATCHES_LEASE_MS: '1500',
        TOLLGATE_BATCHES_CONCURRENCY: '6',
        // The killed replica's holds expire within a lease and a second: a short one, so the test
        // sees it.
        TOLLGATE_HOLD_LEASE_MS: '2000',
      },
    });
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  it('completes after a restart: one result a custom_id, one record and one charge a line, no hold', async () => {
    const { sql } = fleet;
    const one = await fleet.start('one');
    await fleet.addSimChat(one);
    const org = await fleet.admin<{ id: string }>(one, 'POST', '/orgs', { name: 'batch killed' });
    await fleet.admin(one, 'POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
    const key = await fleet.admin<{ secret: string }>(one, 'POST', `/orgs/${org.id}/keys`, { name: 'batch' });
    const body = (i: number) => ({
      model: 'sim-chat',
      max_tokens: LINE_TOKENS,
      ignore_eos: true,
      messages: [{ role: 'user', content: `Question number ${i}` }],
    });
    const client = new OpenAI({ baseURL: `${one.url}/v1`, apiKey: key.secret, maxRetries: 0 });
    const batch = await startBatch(client, batchFile(LINES, '/v1/chat/completions', body), '/v1/chat/completions');
    const before = sim.stats();

    // Killed once some lines are done and others run on the engine, all of them this replica's.
    const running = await until(
      'some lines are done and others run on the engine',
      async () => {
        const rows = await sql<Array<{ status: string; claimed_by: string | null }>>`
          select status, claimed_by from batch_lines where batch_id = ${batch.id}`;
        const runningNow = rows.filter((row) => row.status === 'running');
        return rows.some((row) => row.status === 'done') && sim.stats().running >= 3 && runningNow;
      },
      { timeout: 30_000, interval: 20 },
    );
    const onEngine = sim.stats().running;
    expect(new Set(running.map((row) => row.claimed_by))).toEqual(
      new Set([expect.stringMatching(new RegExp(`^${hostname()}:${one.child.pid}:`))]),
    );
    await fleet.kill(one);
    const [atKill] = await sql<Array<{ done: number }>>`
      select count(*)::int as done from batch_lines where batch_id = ${batch.id} and status = 'done'`;
    const doneAtKill = atKill!.done;

    const again = await fleet.start('one');
    const restarted = new OpenAI({ baseURL: `${again.url}/v1`, apiKey: key.secret, maxRetries: 0 });
    const finished = await ended(restarted, batch.id, 60_000);
    expect(finished.status).toBe('completed');
    expect(finished.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const results = await resultLines(restarted, finished.output_file_id);
    const customIds = results.map((line) => line.custom_id as string).sort();
    expect(customIds).toEqual(Array.from({ length: LINES }, (_, i) => `req-${i + 1}`).sort());
    expect(finished.error_file_id ?? null).toBeNull();

    // The books: one record a line request id, one charge each, the wallet their sum.
    const requestIds = Array.from({ length: LINES }, (_, line) => lineRequestId(batch.id, line)).sort();
    const records = await until(
      'every line is recorded',
      async () => {
        const rows = await sql<Array<{ id: string; completion_tokens: number; cost_nanos: string; status: number }>>`
          select id, completion_tokens, cost_nanos::text, status from usage_records where org_id = ${org.id}`;
        return rows.length >= LINES && rows;
      },
      { timeout: 20_000, interval: 200 },
    );
    expect(records.map((record) => record.id).sort()).toEqual(requestIds);
    expect(records.every((record) => record.status === 200 && record.completion_tokens === LINE_TOKENS)).toBe(true);
    const charges = await sql<Array<{ request_id: string; amount: string }>>`
      select request_id, amount_nanos::text as amount from ledger_entries where org_id = ${org.id} and kind = 'charge'`;
    expect(charges.map((charge) => charge.request_id).sort()).toEqual(requestIds);
    const spent = records.reduce((sum, record) => sum + BigInt(record.cost_nanos), 0n);
    expect(charges.reduce((sum, charge) => sum - BigInt(charge.amount), 0n)).toBe(spent);
    const [wallet] = await sql<Array<{ balance: string }>>`
      select balance_nanos::text as balance from wallets where org_id = ${org.id}`;
    expect(BigInt(wallet!.balance)).toBe(CREDIT - spent);
    // Each result line says what its record does.
    for (const line of results) {
      const usage = (line.response as { body: { usage: { completion_tokens: number } } }).body.usage;
      expect(usage.completion_tokens).toBe(LINE_TOKENS);
    }

    // The engine's own counts: every line answered once to its end, and the calls the kill cut
    // short seen closed (none of them billed: a line answered as JSON had nothing to bill yet).
    const stats = sim.stats();
    const completed = stats.completed - before.completed;
    const aborted = stats.aborted - before.aborted;
    expect(completed).toBeGreaterThanOrEqual(LINES);
    expect(aborted).toBeGreaterThanOrEqual(1);
    expect(aborted + completed - LINES).toBeLessThanOrEqual(running.length);
    console.info(
      `batch SIGKILL: ${running.length} lines claimed (${onEngine} on the engine) and ${doneAtKill} done ` +
        `at the kill; the engine ` +
        `completed ${completed} calls, saw ${aborted} cut; ${records.length} records, ${charges.length} charges`,
    );

    await until('no hold of the killed replica is left', async () => (await redisHolds(fleet.prefix, org.id)) === 0, {
      timeout: 15_000,
      interval: 200,
    });
    const [left] = await sql<Array<{ claimed: number }>>`
      select count(*)::int as claimed from batch_lines where batch_id = ${batch.id} and claimed_by is not null`;
    expect(left!.claimed).toBe(0);
  }, 150_000);
});
