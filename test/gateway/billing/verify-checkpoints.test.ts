import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chargeRecord } from '../../helpers/charges.js';

const stores = await availableStores();
const ADMIN = { authorization: 'Bearer test-operator-token-0123456789' };

describe.each(stores)('wallet verify from its checkpoint (%s)', (store) => {
  let gateway: TestGateway;
  let owner: { orgId: string; keyId: string };
  let charges = 0;

  const execute = (statement: ReturnType<typeof sql>) => gateway.services.db.execute(statement);
  const verify = async (query = '') => {
    const res = await fetch(`${gateway.url}/admin/v1/orgs/${owner.orgId}/wallet/verify${query}`, { headers: ADMIN });
    return { status: res.status, body: JSON.parse(await res.text()) };
  };
  /**
   * `n` top-ups written straight into the ledger (as `WalletService.credit` would), and `c`
   * charges.
   */
  const grow = async (n: number, c: number) => {
    await execute(sql`with w as (select balance_nanos from wallets where org_id = ${owner.orgId} for update)
      insert into ledger_entries (org_id, kind, amount_nanos, balance_after_nanos, note, created_at)
      select ${owner.orgId}, 'topup', 1000, w.balance_nanos + g * 1000, 'bulk ' || g, clock_timestamp()
      from w, generate_series(1, ${n}) g order by g`);
    await execute(sql`update wallets set balance_nanos = balance_nanos + ${n * 1000} where org_id = ${owner.orgId}`);
    const records = Array.from({ length: c }, () => chargeRecord(`req_cp_${store}_${charges++}`, owner, 7n));
    await gateway.services.wallets.chargeMany(records);
  };

  beforeAll(async () => {
    gateway = await startTestGateway(store);
    const tenant = await gateway.tenant({ credit: '1.00' });
    owner = { orgId: tenant.orgId, keyId: tenant.keyId };
    // More than a page (2,000 entries): a page's first entry follows the one before it.
    await grow(2500, 5);
  });
  afterAll(() => gateway?.close());

  it('reads only the entries and usage records since the checkpoint the last one left', async () => {
    const first = (await verify()).body;
    // No checkpoint yet: the first verification reads everything (the credit, 2,500 top-ups, 5
    // charges).
    expect(first).toMatchObject({ ok: true, mode: 'full', checkpoint: null, ledger_entries: 2506, entries_read: 2506 });
    expect(first.usage_records).toBe(5);
    await grow(40, 3);
    const next = (await verify()).body;
    expect(next).toMatchObject({ ok: true, mode: 'incremental', ledger_entries: 2549, entries_read: 43 });
    expect(next.usage_records).toBe(3);
    expect(next.balance_nanos).toBe(next.ledger_sum_nanos);
    expect(next.checkpoint.last_entry_id).toBeGreaterThan(0);
    const idle = (await verify()).body;
    expect(idle).toMatchObject({ ok: true, mode: 'incremental', ledger_entries: 2549, entries_read: 0 });
    expect(idle.checkpoint.last_entry_id).toBeGreaterThan(next.checkpoint.last_entry_id);
  });

  it('finds an old entry edited behind the checkpoint with a full verification, and keeps the checkpoint', async () => {
    // A note changes no balance: only the digest the checkpoint keeps can see it.
    await execute(sql`update ledger_entries set note = 'bulk 7 (edited)' where org_id = ${owner.orgId}
      and note = 'bulk 7' and id = (select min(id) from ledger_entries where org_id = ${owner.orgId} and note = 'bulk 7')`);
    expect((await verify()).body).toMatchObject({ ok: true, mode: 'incremental', entries_read: 0 });
    const full = (await verify('?full=true')).body;
    expect(full).toMatchObject({ ok: false, mode: 'full', difference_count: 1 });
    expect(full.differences[0]).toMatchObject({
      kind: 'checkpoint_differs',
      ledger_entry_id: full.checkpoint.last_entry_id,
    });
    expect(full.differences[0].expected_nanos).toBe(full.differences[0].found_nanos);
    // Books that differ leave the checkpoint where it was: the next full verification fails the
    // same way.
    expect((await verify('?full=true')).body.differences[0].kind).toBe('checkpoint_differs');
    await execute(sql`update ledger_entries set note = 'bulk 7' where note = 'bulk 7 (edited)'`);
    expect((await verify('?full=true')).body).toMatchObject({ ok: true, mode: 'full', entries_read: 2549 });
  });

  it("names an entry's balance edited at a page's end, and the next page's first entry that follows it", async () => {
    const [entry] = rows<{ id: string }>(
      await execute(sql`select id::text as id from ledger_entries where org_id = ${owner.orgId}
        order by id offset 1999 limit 1`),
    );
    const id = Number(entry!.id);
    await execute(sql`update ledger_entries set balance_after_nanos = balance_after_nanos + 5 where id = ${id}`);
    const full = (await verify('?full=true')).body;
    const chain = full.differences.filter((d: { kind: string }) => d.kind === 'entry_balance_differs');
    expect(chain.map((d: { ledger_entry_id: number }) => d.ledger_entry_id)).toEqual([id, id + 1]);
    expect(BigInt(chain[0].found_nanos) - BigInt(chain[0].expected_nanos)).toBe(5n);
    expect(BigInt(chain[1].expected_nanos) - BigInt(chain[1].found_nanos)).toBe(5n);
    await execute(sql`update ledger_entries set balance_after_nanos = balance_after_nanos - 5 where id = ${id}`);
    expect((await verify('?full=true')).body).toMatchObject({ ok: true });
  });

  it('names a checkpoint whose last entries were removed, without reading the history', async () => {
    const [last] = rows<{ id: string; amount: string }>(
      await execute(sql`delete from ledger_entries where id = (select max(id) from ledger_entries
        where org_id = ${owner.orgId}) returning id::text as id, amount_nanos::text as amount`),
    );
    await execute(sql`update wallets set balance_nanos = balance_nanos - ${last!.amount}::bigint
      where org_id = ${owner.orgId}`);
    const v = (await verify()).body;
    expect(v).toMatchObject({ ok: false, mode: 'incremental', entries_read: 0 });
    expect(v.differences.map((d: { kind: string }) => d.kind)).toContain('checkpoint_differs');
  });

  it('streams its progress as NDJSON when asked, the verification last', async () => {
    const res = await fetch(`${gateway.url}/admin/v1/orgs/${owner.orgId}/wallet/verify?full=true`, {
      headers: { ...ADMIN, accept: 'application/x-ndjson' },
    });
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ object: 'wallet.verification.progress', phase: 'ledger' });
    expect(lines.at(-1)).toMatchObject({ object: 'wallet.verification', mode: 'full' });
    expect(lines.slice(0, -1).every((l) => l.object === 'wallet.verification.progress')).toBe(true);
  });

  it('refuses a full that is not true or false, and an unknown organization', async () => {
    expect((await verify('?full=yes')).status).toBe(400);
    const res = await fetch(`${gateway.url}/admin/v1/orgs/org_missing/wallet/verify`, {
      headers: { ...ADMIN, accept: 'application/x-ndjson' },
    });
    expect(res.status).toBe(404);
  });
});

function rows<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}
