import { sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();
const ADMIN = { authorization: 'Bearer test-operator-token-0123456789' };

describe.each(stores)('wallet verify and the ledger export (%s)', (store) => {
  let gateway: TestGateway;
  let orgId: string;

  const admin = async (path: string, init: RequestInit = {}) => {
    const res = await fetch(`${gateway.url}/admin/v1${path}`, { ...init, headers: { ...ADMIN, ...init.headers } });
    return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
  };
  const verify = async () => JSON.parse((await admin(`/orgs/${orgId}/wallet/verify`)).text);
  // A row edited by hand is history: the default verification reads from its last checkpoint on, a
  // full one all.
  const verifyAll = async () => JSON.parse((await admin(`/orgs/${orgId}/wallet/verify?full=true`)).text);
  const execute = (statement: ReturnType<typeof sql>) => gateway.services.db.execute(statement);

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_SIM_ITL_MS: '5' });
    const tenant = await gateway.tenant({ credit: '1.00' });
    orgId = tenant.orgId;
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    // Generated traffic: charges (JSON and streamed), top-ups and an adjustment between them, and a
    // cancelled stream.
    for (let i = 0; i < 4; i++) {
      await client.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: `turn ${i}` }] });
      const topup = await admin(`/orgs/${orgId}/wallet/topups`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: '0.25', note: `invoice ${i}` }),
      });
      expect(topup.status).toBe(201);
    }
    const stream = await client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      messages: [{ role: 'user', content: 'streamed' }],
    });
    for await (const _chunk of stream) void _chunk;
    const controller = new AbortController();
    const cancelled = await client.chat.completions.create(
      { model: 'sim-chat', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'long' }] },
      { signal: controller.signal },
    );
    for await (const chunk of cancelled)
      if (chunk.choices[0]?.delta.content) {
        controller.abort();
        break;
      }
    await admin(`/orgs/${orgId}/wallet/adjustments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '-0.01', note: 'goodwill reversed' }),
    });
    await gateway.charged();
  });
  afterAll(() => gateway?.close());

  it('finds no difference in generated traffic, a cancelled stream among it', async () => {
    const v = await verify();
    expect(v).toMatchObject({
      object: 'wallet.verification',
      ok: true,
      mode: 'full',
      difference_count: 0,
      differences: [],
    });
    expect(v.usage_records).toBe(6);
    // One credit, four top-ups, six charges, one adjustment.
    expect(v.ledger_entries).toBe(12);
    expect(v.ledger_sum_nanos).toBe(v.balance_nanos);
    const statuses = await execute(sql`select status from usage_records where org_id = ${orgId} order by status`);
    expect(JSON.stringify(statuses)).toContain('499');
  });

  it('exports the window as JSON: every usage record names its entry, every entry its cause', async () => {
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
    const to = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19) + 'Z';
    const res = await admin(`/orgs/${orgId}/wallet/ledger?from=${from}&to=${to}`);
    expect(res.status).toBe(200);
    const x = JSON.parse(res.text);
    expect(x.opening_balance_nanos).toBe('0');
    expect(x.entries).toHaveLength(12);
    expect(x.usage).toHaveLength(6);
    const entryById = new Map(x.entries.map((e: { id: number }) => [e.id, e]));
    for (const u of x.usage) {
      const entry = entryById.get(u.ledger_entry_id) as { kind: string; request_id: string; amount_nanos: string };
      expect(entry).toMatchObject({ kind: 'charge', request_id: u.request_id });
      expect(BigInt(entry.amount_nanos)).toBe(-BigInt(u.cost_nanos));
    }
    for (const e of x.entries) {
      if (e.kind === 'charge')
        expect(x.usage.some((u: { request_id: string }) => u.request_id === e.request_id)).toBe(true);
      else expect(['topup', 'adjustment']).toContain(e.kind);
    }
    const sum = x.entries.reduce((total: bigint, e: { amount_nanos: string }) => total + BigInt(e.amount_nanos), 0n);
    expect(sum.toString()).toBe(x.closing_balance_nanos);
    expect(x.closing_balance_nanos).toBe((await verify()).balance_nanos);

    const csv = await admin(`/orgs/${orgId}/wallet/ledger.csv?from=${from}&to=${to}`);
    expect(csv.type).toContain('text/csv');
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'ledger_entry_id,entry_time_utc,kind,amount_nanos,balance_after_nanos,note,request_id,usage_time_utc,key_id,' +
        'project_id,model,endpoint,prompt_tokens,completion_tokens,cost_nanos,status,usage_source,cached_tokens,reasoning_tokens,batch_id',
    );
    expect(lines).toHaveLength(13);
    expect(lines.filter((l) => l.split(',')[2] === 'charge').every((l) => l.includes('sim-chat'))).toBe(true);
    expect(lines.some((l) => l.includes('invoice 3'))).toBe(true);
  });

  it('opens a later window at the balance the earlier one closed with', async () => {
    const from = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000).toISOString();
    const to = new Date(Date.parse(from) + 3_600_000).toISOString();
    const x = JSON.parse((await admin(`/orgs/${orgId}/wallet/ledger?from=${from}&to=${to}`)).text);
    expect(x).toMatchObject({ entries: [], usage: [] });
    expect(x.opening_balance_nanos).toBe((await verify()).balance_nanos);
    expect(x.closing_balance_nanos).toBe(x.opening_balance_nanos);
  });

  it('refuses a window that is not one with 400', async () => {
    const res = await admin(`/orgs/${orgId}/wallet/ledger?from=2026-11-02&to=2026-11-01`);
    expect(res.status).toBe(400);
    expect((await admin('/orgs/org_missing/wallet/verify')).status).toBe(404);
  });

  it("names a usage record whose cost was edited by hand, with its charge's entry", async () => {
    const [record] = rows<{ id: string }>(
      await execute(sql`select id from usage_records where org_id = ${orgId} and status = 499`),
    );
    const [entry] = rows<{ id: string }>(
      await execute(sql`select id from ledger_entries where request_id = ${record!.id}`),
    );
    await execute(sql`update usage_records set cost_nanos = cost_nanos + 7 where id = ${record!.id}`);
    const v = await verifyAll();
    expect(v.ok).toBe(false);
    expect(v.difference_count).toBe(1);
    expect(v.differences[0]).toMatchObject({
      kind: 'charge_differs',
      request_id: record!.id,
      ledger_entry_id: Number(entry!.id),
    });
    expect(BigInt(v.differences[0].expected_nanos) - BigInt(v.differences[0].found_nanos)).toBe(7n);
    await execute(sql`update usage_records set cost_nanos = cost_nanos - 7 where id = ${record!.id}`);
    expect((await verifyAll()).ok).toBe(true);
  });

  it('names a ledger amount edited by hand: the entry, its charge, and the balance', async () => {
    const [entry] = rows<{ id: string; request_id: string }>(
      await execute(
        sql`select id::text as id, request_id from ledger_entries where org_id = ${orgId} and kind = 'charge' order by id limit 1`,
      ),
    );
    await execute(sql`update ledger_entries set amount_nanos = amount_nanos - 1000 where id = ${Number(entry!.id)}`);
    const v = await verifyAll();
    const named = v.differences.map((d: { kind: string; ledger_entry_id: number | null }) => [
      d.kind,
      d.ledger_entry_id,
    ]);
    // The checkpoint the earlier verifications left covers the entry: its digest differs too.
    expect(named).toEqual([
      ['balance_differs', null],
      ['checkpoint_differs', v.checkpoint.last_entry_id],
      ['entry_balance_differs', Number(entry!.id)],
      ['charge_differs', Number(entry!.id)],
    ]);
    expect(v.differences[3].request_id).toBe(entry!.request_id);
  });
});

function rows<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : (result as { rows: T[] }).rows;
}
