import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import {
  billedCall,
  type BilledCallKind,
  billedReplicas,
  type BilledReplicas,
  type StreamProtocol,
  watchStream,
} from '../../helpers/billed-replicas.js';
import { expectCsvMatches, expectWindowsChain, type LedgerExport } from '../../helpers/ledger-exports.js';
import { type GatewayProcess, repoRoot } from '../../helpers/processes.js';
import { scrape } from '../../helpers/prometheus.js';
import { postgresAndRedisOrSkip } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * A month of an organization's books, reconciled: two replicas on PostgreSQL
 * and Redis serve a month of traffic (charges on chat, Messages and
 * Responses, JSON and streamed; top-ups and an adjustment; streams their
 * clients cancel; response-cache hits, which cost nothing; a replica
 * SIGKILLed mid-stream and started again, its streams charged from their
 * checkpoints), then the built CLI's `tollgate wallet verify` finds no
 * difference, the month's export (JSON and CSV) ties every usage record to
 * its charge and every entry to its cause, the daily rollups every report
 * reads equal the usage records to the nano-unit, and a usage record's cost
 * and a ledger amount edited by hand are each named.
 *
 * How the month is made: the requests are real and run now, one "day" after
 * another (the day before the month, its 31 days, the day after), each day
 * ending once its requests are all in the books. Neither clock that dates a
 * row can be set (a usage record is dated by its replica's clock, a ledger
 * entry by PostgreSQL's `now()`), so afterwards the test moves the
 * organization's rows onto the calendar: each row of a day's stretch of real
 * time moves to that day at 09:00 UTC plus its offset into the stretch, usage
 * records and ledger entries alike (one statement each, `redate`). The map
 * keeps every row's order and every gap within a day, so what the books say
 * of each other is what the replicas wrote; only the dates are the month's.
 */

const ready = await postgresAndRedisOrSkip('the month-of-books test');

const ADMIN_TOKEN = 'month-of-books-operator-token-0123';
/** The checkpoint interval of a running stream: what the SIGKILL may lose of each. */
const EVERY_TOKENS = 20;
const MONTH = '2026-10';
/**
 * The day before the month, its 31 days, and the day after: the exports either side must not hold
 * the month's rows.
 */
const DAYS = [
  '2026-09-30',
  ...Array.from({ length: 31 }, (_, i) => `2026-10-${String(i + 1).padStart(2, '0')}`),
  '2026-11-01',
];
const CRASH_DAY = DAYS.indexOf('2026-10-17');
const CANCEL_DAYS = new Map<number, StreamProtocol>([
  [DAYS.indexOf('2026-10-03'), 'chat'],
  [DAYS.indexOf('2026-10-11'), 'responses'],
  [DAYS.indexOf('2026-10-19'), 'messages'],
  [DAYS.indexOf('2026-10-31'), 'chat'],
]);
/**
 * The notes of the month's top-ups and its adjustment: each entry that is not a charge says its
 * cause.
 */
const CAUSES = /^(invoice \d{4}-\d\d-\d\d|credit note)$/;
const CACHE_DAYS = new Set([DAYS.indexOf('2026-10-05'), DAYS.indexOf('2026-10-24')]);

const KINDS: BilledCallKind[] = [
  'chat json',
  'chat stream',
  'messages json',
  'messages stream',
  'responses json',
  'responses stream',
];

describe.skipIf(!ready)('a month of traffic on two replicas, reconciled', () => {
  let sim: RunningSimulator;
  let fleet: BilledReplicas;

  beforeAll(async () => {
    // 2 ms a token: a day's short answers take tens of milliseconds, a long stream of 3,000 tokens
    // 6 s.
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 16_384 }],
      itlMs: 2,
      defaultMaxTokens: 10_000,
    });
    fleet = await billedReplicas({
      adminToken: ADMIN_TOKEN,
      simUrl: sim.url,
      env: {
        TOLLGATE_STREAM_CHECKPOINT_TOKENS: String(EVERY_TOKENS),
        TOLLGATE_STREAM_CHECKPOINT_MS: '600000',
        TOLLGATE_HOLD_LEASE_MS: '2000',
      },
    });
  }, 60_000);

  afterAll(async () => {
    await fleet?.close();
    await sim?.close().catch(() => {});
  }, 60_000);

  /** A stream its client abandons once it has read a few tokens. */
  async function cancelled(gateway: GatewayProcess, secret: string, protocol: StreamProtocol, prompt: string) {
    const stream = await watchStream(gateway, secret, protocol, 2_000, prompt);
    await until(`the ${protocol} stream's client has read some tokens`, () => stream.received >= 3, { interval: 5 });
    stream.abort();
    await stream.ended;
    return stream.requestId;
  }

  const now = async () => (await fleet.sql<Array<{ t: string }>>`select clock_timestamp()::text as t`)[0]!.t;

  /**
   * Moves the organization's rows of each day's stretch of real time onto that day of the calendar
   * (see the top).
   */
  async function redate(orgId: string, starts: string[]) {
    const days = DAYS.map((day, i) => ({ real_from: starts[i], real_to: starts[i + 1] ?? 'infinity', day }));
    for (const table of ['usage_records', 'ledger_entries'])
      await fleet.sql`update ${fleet.sql(table)} r set created_at = (d.day::date + time '09:00') at time zone 'UTC' + (r.created_at - d.real_from)
        from json_to_recordset(${JSON.stringify(days)}::text::json) as d(real_from timestamptz, real_to timestamptz, day text)
        where r.org_id = ${orgId} and r.created_at >= d.real_from and r.created_at < d.real_to`;
  }

  /**
   * The `tollgate` command (`bin/tollgate.mjs`, which runs the built `dist/cli/main.js`), as an
   * operator runs it.
   */
  function tollgate(gateway: GatewayProcess, ...args: string[]) {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TOLLGATE_')));
      const child = spawn(
        process.execPath,
        ['bin/tollgate.mjs', ...args, '--url', gateway.url, '--token', ADMIN_TOKEN],
        { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('verify finds no difference in the month; its export ties each record to its charge; hand edits are named', async () => {
    const starts = [await now()];
    let one = await fleet.start('one');
    // Replica two starts while one is set up (one has made the schema).
    const starting = fleet.start('two');
    await fleet.addSimChat(one);
    const org = await fleet.admin<{ id: string }>(one, 'POST', '/orgs', { name: 'a month of books' });
    const agent = await fleet.admin<{ secret: string }>(one, 'POST', `/orgs/${org.id}/keys`, {
      name: 'agent',
      max_concurrency: 50,
      requests_per_minute: 10_000,
    });
    const cached = await fleet.admin<{ secret: string }>(one, 'POST', `/orgs/${org.id}/keys`, {
      name: 'cached',
      response_cache: true,
    });
    const two = await starting;
    const topup = (gateway: GatewayProcess, amount: string, note: string) =>
      fleet.admin(gateway, 'POST', `/orgs/${org.id}/wallet/topups`, { amount, note });

    const requestIds: string[] = [];
    /** The streams cut by the SIGKILL, and the tokens each client had read by then. */
    const crashed = new Map<string, number>();
    for (let d = 0; d < DAYS.length; d++) {
      if (d > 0) starts.push(await now());
      const day = DAYS[d]!;
      // Requests alternate between the replicas; on the crash day replica two takes them all (one
      // is about to die).
      const replica = (i: number) => (d !== CRASH_DAY && (d + i) % 2 === 0 ? one : two);
      if (d % 7 === 0) await topup(replica(0), '5.00', `invoice ${day}`);
      if (d === DAYS.indexOf('2026-10-15'))
        await fleet.admin(two, 'POST', `/orgs/${org.id}/wallet/adjustments`, { amount: '-0.50', note: 'credit note' });
      const work: Array<Promise<string>> = KINDS.map((kind, i) =>
        billedCall(replica(i), agent.secret, kind, `${day}: ${kind} ${'some context '.repeat(i * 10)}`),
      );
      const cancel = CANCEL_DAYS.get(d);
      if (cancel) work.push(cancelled(replica(1), agent.secret, cancel, `${day}: a question asked and dropped`));
      if (CACHE_DAYS.has(d)) {
        // The same question twice, through both replicas: the second answer is the cache's (Redis),
        // free.
        const prompt = `${day}: a question asked twice`;
        requestIds.push(await billedCall(one, cached.secret, 'chat json', prompt));
        work.push(billedCall(two, cached.secret, 'chat json', prompt));
      }
      if (d === CRASH_DAY) {
        // Three long streams on replica one, cut by its SIGKILL, while replica two serves the day's
        // other requests.
        const cut = await Promise.all(
          (['chat', 'responses', 'messages'] as const).map((p) =>
            watchStream(one, agent.secret, p, 3_000, `${day}: a long task `.repeat(100)),
          ),
        );
        await until('every cut stream has passed three checkpoints', () =>
          cut.every((s) => s.received >= 3 * EVERY_TOKENS),
        );
        await fleet.kill(one);
        await Promise.all(cut.map((s) => s.ended));
        for (const s of cut) crashed.set(s.requestId, s.received);
        one = await fleet.start('one');
        const restarted = one;
        await until(
          'the restarted replica has written its journal',
          async () =>
            (await scrape(`${restarted.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth') === 0,
          { timeout: 20_000, interval: 100 },
        );
      }
      requestIds.push(...(await Promise.all(work)), ...(d === CRASH_DAY ? crashed.keys() : []));
      // The day ends once all its requests are in the books (a cancelled stream is settled after
      // its client left).
      await until(`the requests of ${day} are all recorded`, async () => {
        const [row] = await fleet.sql<Array<{ n: number }>>`
          select count(*)::int as n from usage_records where id = any(${requestIds})`;
        return row!.n === requestIds.length;
      });
    }
    await expectRollupsEqualRecords(org.id);
    await redate(org.id, starts);

    // What the month holds, as written: every protocol and form, cancelled streams (499), the
    // crash's (500), cache hits.
    const records = await fleet.sql<
      Array<{ id: string; status: number; cost: string; cache_hit: boolean; completion_tokens: number }>
    >`select id, status, cost_nanos::text as cost, cache_hit, completion_tokens from usage_records where org_id = ${org.id}`;
    expect(records).toHaveLength(requestIds.length);
    expect(records.filter((r) => r.status === 499)).toHaveLength(CANCEL_DAYS.size);
    const cut = records.filter((r) => r.status === 500);
    expect(cut.map((r) => r.id).sort()).toEqual([...crashed.keys()].sort());
    // Each charged from its checkpoints: at least what its client had read, less a checkpoint's
    // interval and the one being written when the process died (its client may be a few tokens past
    // it at 2 ms a token).
    for (const r of cut) {
      expect(r.completion_tokens).toBeGreaterThan(0);
      expect(r.completion_tokens).toBeGreaterThanOrEqual(crashed.get(r.id)! - 2 * EVERY_TOKENS);
    }
    expect(records.filter((r) => r.cache_hit && r.cost === '0')).toHaveLength(CACHE_DAYS.size);

    // The built CLI, against either replica: the books agree.
    const clean = await tollgate(two, 'wallet', 'verify', '--org', org.id);
    expect(clean, clean.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(clean.stdout).toContain('agree');
    expect(clean.stdout).toContain(`${records.length} usage records`);

    await checkExports(one, org.id, records.length);

    const firstCut = [...crashed.keys()][0]!;
    // A usage record's cost (a crashed stream's) and a top-up's amount, edited by hand: each is
    // named.
    const [charge] = await fleet.sql<
      Array<{ id: number }>
    >`select id from ledger_entries where request_id = ${firstCut}`;
    const [invoice] = await fleet.sql<Array<{ id: number }>>`
      select id from ledger_entries where org_id = ${org.id} and note = 'invoice 2026-10-14'`;
    await fleet.sql`update usage_records set cost_nanos = cost_nanos + 7 where id = ${firstCut}`;
    await fleet.sql`update ledger_entries set amount_nanos = amount_nanos + 1000 where id = ${invoice!.id}`;
    // Behind the checkpoint the clean verify left: only a full verify reads those entries again.
    const edited = await tollgate(one, 'wallet', 'verify', '--org', org.id, '--full');
    expect(edited.code, edited.stdout).toBe(1);
    expect(edited.stderr).toContain(`the books of ${org.id} differ in 4 place(s)`);
    expect(edited.stderr).toMatch(/checkpoint_differs: /);
    expect(edited.stderr).toMatch(/balance_differs: entry -, request -: expected \d+, found \d+/);
    expect(edited.stderr).toMatch(new RegExp(`entry_balance_differs: entry ${invoice!.id}, request -: `));
    expect(edited.stderr).toMatch(new RegExp(`charge_differs: entry ${charge!.id}, request ${firstCut}: `));
  }, 120_000);

  /**
   * The daily rollups (written in each charge's statement, read by every report) equal the usage
   * records they sum, to the nano-unit, group by group: before `redate`, which moves the records
   * but not the rollups (a rollup is dated by the day its records were written).
   */
  async function expectRollupsEqualRecords(orgId: string) {
    const sums = `count(*)::text as requests, count(*) filter (where cache_hit)::text as cache_hits,
      count(*) filter (where status >= 400)::text as errors, sum(prompt_tokens)::text as prompt,
      sum(completion_tokens)::text as completion, sum(cached_tokens)::text as cached,
      sum(reasoning_tokens)::text as reasoning, sum(cost_nanos)::text as cost`;
    const fromRecords = await fleet.sql.unsafe(
      `select (created_at at time zone 'UTC')::date::text as day, key_id, project_id, model_id, ${sums}
       from usage_records where org_id = $1 group by 1, 2, 3, 4 order by 1, 2, 3, 4`,
      [orgId],
    );
    const fromRollups = await fleet.sql`
      select day::text as day, key_id, project_id, model_id, requests::text as requests,
        cache_hits::text as cache_hits, errors::text as errors, prompt_tokens::text as prompt,
        completion_tokens::text as completion, cached_tokens::text as cached, reasoning_tokens::text as reasoning,
        cost_nanos::text as cost
      from usage_daily where org_id = ${orgId} and not batch order by 1, 2, 3, 4`;
    expect(fromRecords.length).toBeGreaterThan(0);
    expect([...fromRollups]).toEqual([...fromRecords]);
  }

  /**
   * The month's export and the months either side: each record and entry in exactly one, each tied
   * to its cause.
   */
  async function checkExports(gateway: GatewayProcess, orgId: string, recordCount: number) {
    const exported = async (month: string) =>
      (await fleet.admin(gateway, 'GET', `/orgs/${orgId}/wallet/ledger?month=${month}`)) as unknown as LedgerExport;
    const [before, month, after] = await Promise.all(['2026-09', MONTH, '2026-11'].map(exported));
    const [wallet] = await fleet.sql<Array<{ balance: string }>>`
      select balance_nanos::text as balance from wallets where org_id = ${orgId}`;
    expect(after!.closing_balance_nanos).toBe(wallet!.balance);

    expectWindowsChain([before!, month!, after!], CAUSES);
    // Every record and every entry is in exactly one of the three months, and the month's are dated
    // in it.
    const all = <T>(pick: (x: LedgerExport) => T[]) => [before!, month!, after!].flatMap(pick);
    expect(new Set(all((x) => x.usage.map((u) => u.request_id))).size).toBe(recordCount);
    expect(all((x) => x.usage)).toHaveLength(recordCount);
    const [entries] = await fleet.sql<Array<{ n: number }>>`
      select count(*)::int as n from ledger_entries where org_id = ${orgId}`;
    expect(new Set(all((x) => x.entries.map((e) => e.id))).size).toBe(entries!.n);
    expect(all((x) => x.entries)).toHaveLength(entries!.n);
    const days = new Set(month!.entries.map((e) => e.created_at.slice(0, 10)));
    expect([...days].sort()).toEqual(DAYS.filter((d) => d.startsWith(MONTH)));
    expect(new Set(month!.usage.map((u) => u.endpoint))).toEqual(
      new Set(['chat.completions', 'messages', 'responses']),
    );
    expect(new Set(month!.usage.map((u) => u.status))).toEqual(new Set([200, 499, 500]));

    // The CSV of the month: one row per entry, then one per free record, each charge with its usage
    // beside it.
    const response = await fetch(`${gateway.url}/admin/v1/orgs/${orgId}/wallet/ledger.csv?month=${MONTH}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expectCsvMatches(await response.text(), month!, 'sim-chat', CAUSES);
  }
});
