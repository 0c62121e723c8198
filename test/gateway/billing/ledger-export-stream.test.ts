import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { postgresAvailable } from '../../helpers/services.js';
import { skippedWithout } from '../../helpers/skips.js';

/**
 * A window of the ledger longer than the export once held (100,000 rows, refused with 400 past it)
 * comes whole, streamed: the CSV's rows are counted as they arrive, never held, and the JSON chains
 * from its opening balance to its closing one. History of that size is written by SQL (as a busy
 * day would leave it, a year before the organization's top-up), consistent: each charge minus its
 * usage record's cost, each balance the one before less it, and every 100th request free.
 */

const missing = (await postgresAvailable()) ? null : 'the streamed export test needs PostgreSQL (120,000 rows)';
skippedWithout(missing);

const ADMIN = { authorization: 'Bearer test-operator-token-0123456789' };
const RECORDS = 120_000;
const FREE = RECORDS / 100;
const COST = 1_000n;

describe.skipIf(missing !== null)('the ledger export streamed, no row cap (postgres)', () => {
  let gateway: TestGateway;
  let orgId: string;

  beforeAll(async () => {
    gateway = await startTestGateway('postgres');
    const tenant = await gateway.tenant({ credit: '1000.00' });
    orgId = tenant.orgId;
    const { db } = gateway.services;
    await db.execute(sql`insert into usage_records (id, org_id, key_id, model_id, endpoint, prompt_tokens,
        completion_tokens, cost_nanos, status, streamed, usage_source, latency_ms, created_at)
      select 'bulk-' || lpad(g::text, 6, '0'), ${orgId}, ${tenant.keyId}, 'm', 'chat.completions', 1, 1,
        case when g % 100 = 0 then 0 else ${COST.toString()}::bigint end, 200, false, 'upstream', 1,
        '2025-03-01T00:00:00Z'::timestamptz + g * interval '1 second'
      from generate_series(1, ${RECORDS}) g`);
    await db.execute(sql`insert into ledger_entries (org_id, kind, amount_nanos, balance_after_nanos, request_id, created_at)
      select ${orgId}, 'charge', -${COST.toString()}::bigint,
        -${COST.toString()}::bigint * (g - g / 100), 'bulk-' || lpad(g::text, 6, '0'),
        '2025-03-01T00:00:00.001Z'::timestamptz + g * interval '1 second'
      from generate_series(1, ${RECORDS}) g where g % 100 <> 0 order by g`);
    await db.execute(sql`analyze ledger_entries`);
    await db.execute(sql`analyze usage_records`);
  }, 120_000);
  afterAll(() => gateway?.close());

  const url = (path: string) =>
    `${gateway.url}/admin/v1/orgs/${orgId}/wallet/${path}?from=2025-03-01T00:00:00Z&to=2025-03-03T00:00:00Z`;

  it('streams a CSV of every row of the window, the first at once', async () => {
    const started = Date.now();
    const res = await fetch(url('ledger.csv'), { headers: ADMIN });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let firstAfterMs = -1;
    let lines = 0;
    let charges = 0;
    let tail = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (firstAfterMs < 0) firstAfterMs = Date.now() - started;
      const text = tail + decoder.decode(value, { stream: true });
      const parts = text.split('\r\n');
      tail = parts.pop()!;
      lines += parts.length;
      for (const line of parts) if (line.includes(',charge,')) charges++;
    }
    expect(tail).toBe('');
    // The header, one row per entry, one per free record.
    expect(lines).toBe(1 + (RECORDS - FREE) + FREE);
    expect(charges).toBe(RECORDS - FREE);
    // At once: in the first half of the export's own time, not at its end as a buffered one would.
    const wholeMs = Date.now() - started;
    console.log(`first bytes after ${firstAfterMs} ms of ${wholeMs} ms`);
    expect(firstAfterMs, `first bytes after ${firstAfterMs} ms of ${wholeMs} ms`).toBeLessThan(wholeMs / 2);
  });

  it('streams the JSON whole: every entry, every usage record, and the balances it chains between', async () => {
    const res = await fetch(url('ledger'), { headers: ADMIN });
    expect(res.status).toBe(200);
    const x = (await res.json()) as {
      opening_balance_nanos: string;
      closing_balance_nanos: string;
      entries: Array<{ amount_nanos: string; balance_after_nanos: string }>;
      usage: Array<{ ledger_entry_id: number | null }>;
    };
    expect(x.entries).toHaveLength(RECORDS - FREE);
    expect(x.usage).toHaveLength(RECORDS);
    expect(x.usage.filter((u) => u.ledger_entry_id === null)).toHaveLength(FREE);
    let balance = BigInt(x.opening_balance_nanos);
    for (const e of x.entries) {
      balance += BigInt(e.amount_nanos);
      expect(e.balance_after_nanos).toBe(balance.toString());
    }
    expect(x.closing_balance_nanos).toBe(balance.toString());
  });

  it("reads a page of the window on the ledger's (org_id, created_at, id) index", async () => {
    const plan = await gateway.services.db.execute(sql`explain select id from ledger_entries
      where org_id = ${orgId} and created_at >= '2025-03-01T00:00:00Z' and created_at < '2025-03-03T00:00:00Z'
      order by created_at, id limit 1000`);
    expect(JSON.stringify(plan)).toContain('ledger_org_time_idx');
  });
});
