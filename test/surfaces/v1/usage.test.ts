import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAmount } from '../../../src/gateway/billing/money.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { expectError } from '../../helpers/envelope.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();

type Row = typeof usageRecords.$inferSelect;
interface Totals {
  requests: number;
  cache_hits: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
  cost: string;
  cost_nanos: string;
}
interface Summary {
  object: string;
  from: string;
  to: string;
  currency: string;
  group_by: string | null;
  totals: Totals;
  data: Array<Totals & Record<string, unknown>>;
}
interface RequestPage {
  object: string;
  data: Array<Record<string, unknown> & { id: string; created_at: string }>;
  has_more: boolean;
  next_cursor: string | null;
}

/** What the summary must say of these records: their sums, exactly. */
function totalsOf(rows: Row[]): Totals {
  const cost = rows.reduce((sum, r) => sum + r.cost, 0n);
  const prompt = rows.reduce((sum, r) => sum + r.promptTokens, 0);
  const completion = rows.reduce((sum, r) => sum + r.completionTokens, 0);
  return {
    requests: rows.length,
    cache_hits: rows.filter((r) => r.cacheHit).length,
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: rows.reduce((sum, r) => sum + r.cachedTokens, 0) },
    completion_tokens_details: { reasoning_tokens: rows.reduce((sum, r) => sum + r.reasoningTokens, 0) },
    cost: formatAmount(cost),
    cost_nanos: cost.toString(),
  };
}

const monthStart = (at = new Date()) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
const lastMonthStart = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1));
const lastMonthMid = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 15, 12));

describe.each(stores)('usage reports (%s)', (store) => {
  let gateway: TestGateway;
  let org: { orgId: string; secret: string; keyId: string };
  let second: { keyId: string; secret: string };
  let other: { orgId: string; secret: string; keyId: string };
  let projectId: string;
  const oldId = 'req_usage_test_last_month';

  beforeAll(async () => {
    gateway = await startTestGateway(store);
    org = await gateway.tenant({ credit: '5.00' });
    projectId = (await gateway.services.projects.create({ orgId: org.orgId, createdBy: null, name: 'p' })).id;
    const { key, secret } = await gateway.services.keys.create({ orgId: org.orgId, name: 'second' });
    second = { keyId: key.id, secret };
    other = await gateway.tenant({ credit: '5.00' });

    const first = new OpenAI({ baseURL: gateway.baseURL, apiKey: org.secret, maxRetries: 0 });
    const withProject = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: second.secret,
      maxRetries: 0,
      defaultHeaders: { 'X-Project-ID': projectId },
    });
    const outsider = new OpenAI({ baseURL: gateway.baseURL, apiKey: other.secret, maxRetries: 0 });

    for (let i = 0; i < 2; i++)
      await first.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: `hello ${i}` }] });
    for await (const _ of await first.chat.completions.create({
      model: 'sim-reasoner',
      stream: true,
      messages: [{ role: 'user', content: 'think' }],
    }))
      void _;
    await first.embeddings.create({ model: 'sim-embed', input: ['a b c', 'd e'] });
    await withProject.chat.completions.create({
      model: 'sim-reasoner',
      messages: [{ role: 'user', content: 'project work' }],
    });
    const stream = await withProject.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'project stream' }],
    });
    for await (const _ of stream) void _;
    await withProject.embeddings.create({ model: 'sim-embed', input: 'project embedding' });
    await outsider.chat.completions.create({ model: 'sim-chat', messages: [{ role: 'user', content: 'other org' }] });

    const record = {
      orgId: org.orgId,
      keyId: org.keyId,
      projectId: null,
      endpoint: 'chat.completions',
      status: 200,
      streamed: false,
      usageSource: 'upstream',
      latencyMs: 5,
      ttftMs: null,
    };
    // Written as the charge writes them (with their daily rollups, which the reports read).
    const cachedAt = new Date();
    await gateway.services.wallets.chargeMany([
      // Last month: outside the default window.
      {
        ...record,
        id: oldId,
        modelId: 'sim-chat',
        promptTokens: 1000,
        completionTokens: 2000,
        cost: 1_350_000n,
        createdAt: lastMonthMid(),
      },
      // Free answers from the response cache, this month: all three share created_at to the
      // microsecond.
      ...[1, 2, 3].map((n) => ({
        ...record,
        id: `req_usage_test_cache_${n}`,
        modelId: 'sim-chat',
        promptTokens: 7,
        completionTokens: n,
        cost: 0n,
        cacheHit: true,
        createdAt: cachedAt,
      })),
    ]);
    // Charges land as each response completes: once all are written, this org has its 11 records.
    await gateway.charged();
    expect(await recordsOf(org.orgId)).toHaveLength(11);
  });
  afterAll(() => gateway?.close());

  /**
   * The org's usage records once this gateway's charges are written (they reach PostgreSQL just
   * after each answer).
   */
  const recordsOf = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId));
  };
  const thisMonth = async (orgId = org.orgId) => (await recordsOf(orgId)).filter((r) => r.createdAt >= monthStart());

  async function get(
    path: string,
    query: Record<string, string> = {},
    secret: string | null = org.secret,
  ): Promise<Response> {
    const headers: Record<string, string> = secret ? { authorization: `Bearer ${secret}` } : {};
    return fetch(`${gateway.baseURL}${path}?${new URLSearchParams(query).toString()}`, { headers });
  }
  async function summary(query: Record<string, string> = {}, secret = org.secret): Promise<Summary> {
    const response = await get('/usage/summary', query, secret);
    expect(response.status).toBe(200);
    return (await response.json()) as Summary;
  }
  async function page(query: Record<string, string> = {}, secret = org.secret): Promise<RequestPage> {
    const response = await get('/usage/requests', query, secret);
    expect(response.status).toBe(200);
    return (await response.json()) as RequestPage;
  }

  it('recorded the traffic it reports on', async () => {
    const rows = await recordsOf(org.orgId);
    expect(rows).toHaveLength(11);
    expect(new Set(rows.map((r) => r.modelId))).toEqual(new Set(['sim-chat', 'sim-reasoner', 'sim-embed']));
    expect(rows.filter((r) => r.streamed)).toHaveLength(2);
    expect(rows.filter((r) => r.projectId === projectId)).toHaveLength(3);
  });

  it('totals this month by default, equal to the sums of the usage records exactly', async () => {
    const before = Date.now();
    const body = await summary();
    const rows = await thisMonth();
    expect(rows).toHaveLength(10);
    expect(body).toEqual({
      object: 'usage.summary',
      from: monthStart().toISOString(),
      to: expect.any(String),
      currency: gateway.services.config.currency,
      group_by: null,
      totals: totalsOf(rows),
      data: [],
    });
    expect(Date.parse(body.to)).toBeGreaterThanOrEqual(before - 1000);
    expect(body.totals.cache_hits).toBe(3);
    expect(BigInt(body.totals.cost_nanos)).toBeGreaterThan(0n);
  });

  it('groups by model, largest cost first, and the groups add up to the totals', async () => {
    const body = await summary({ group_by: 'model' });
    const rows = await thisMonth();
    const expected = ['sim-chat', 'sim-reasoner', 'sim-embed'].map((model) => ({
      model,
      ...totalsOf(rows.filter((r) => r.modelId === model)),
    }));
    expected.sort((a, b) => Number(BigInt(b.cost_nanos) - BigInt(a.cost_nanos)) || a.model.localeCompare(b.model));
    expect(body.group_by).toBe('model');
    expect(body.data).toEqual(expected);
    expect(body.data.reduce((sum, g) => sum + BigInt(g.cost_nanos), 0n).toString()).toBe(body.totals.cost_nanos);
  });

  it('groups by key with the key names, and a key_id filter gives that key its own totals', async () => {
    const body = await summary({ group_by: 'key' });
    const rows = await thisMonth();
    const first = { key_id: org.keyId, key_name: 'test', ...totalsOf(rows.filter((r) => r.keyId === org.keyId)) };
    const other = {
      key_id: second.keyId,
      key_name: 'second',
      ...totalsOf(rows.filter((r) => r.keyId === second.keyId)),
    };
    expect(body.data).toHaveLength(2);
    expect(body.data).toEqual(expect.arrayContaining([first, other]));
    expect(BigInt(body.data[0]!.cost_nanos)).toBeGreaterThanOrEqual(BigInt(body.data[1]!.cost_nanos));

    for (const key of [first, other]) {
      const own = await summary({ key_id: key.key_id });
      const { key_id: _id, key_name: _name, ...totals } = key;
      expect(own.totals).toEqual(totals);
      expect(own.totals.requests).toBeGreaterThan(0);
    }
  });

  it('groups by project, with usage outside any project as project_id null', async () => {
    const body = await summary({ group_by: 'project' });
    const rows = await thisMonth();
    expect(body.data).toEqual(
      expect.arrayContaining([
        { project_id: projectId, ...totalsOf(rows.filter((r) => r.projectId === projectId)) },
        { project_id: null, ...totalsOf(rows.filter((r) => r.projectId === null)) },
      ]),
    );
    expect(body.data).toHaveLength(2);
    const filtered = await summary({ project_id: projectId, model: 'sim-embed' });
    expect(filtered.totals).toEqual(
      totalsOf(rows.filter((r) => r.projectId === projectId && r.modelId === 'sim-embed')),
    );
    expect(filtered.totals.requests).toBe(1);
  });

  it('groups by UTC day in date order, and from/to bound the window', async () => {
    const all = await recordsOf(org.orgId);
    const old = all.find((r) => r.id === oldId)!;
    const recent = all.filter((r) => r.id !== oldId);
    const today = new Date().toISOString().slice(0, 10);

    const wide = await summary({ group_by: 'day', from: lastMonthStart().toISOString().slice(0, 10) });
    expect(wide.from).toBe(lastMonthStart().toISOString());
    expect(wide.totals).toEqual(totalsOf(all));
    expect(wide.data).toEqual([
      { date: lastMonthMid().toISOString().slice(0, 10), ...totalsOf([old]) },
      { date: today, ...totalsOf(recent) },
    ]);

    // Only last month: the inserted record and nothing from today.
    const lastMonth = await summary({ from: lastMonthStart().toISOString(), to: monthStart().toISOString() });
    expect(lastMonth.totals).toEqual(totalsOf([old]));
    expect(lastMonth.totals.cost_nanos).toBe('1350000');
    expect(lastMonth.totals.cost).toBe('0.00135');

    // `to` is exclusive: a window ending at the record's own instant leaves it out; one a
    // millisecond later takes it in.
    const at = old.createdAt.getTime();
    const before = await summary({ from: lastMonthStart().toISOString(), to: new Date(at).toISOString() });
    expect(before.totals.requests).toBe(0);
    expect(before.totals.cost_nanos).toBe('0');
    expect(before.totals.cost).toBe('0.00');
    const through = await summary({ from: new Date(at).toISOString(), to: new Date(at + 1).toISOString() });
    expect(through.totals.requests).toBe(1);
  });

  it('pages through every record exactly once, newest first, two at a time, splitting ties on created_at', async () => {
    const from = lastMonthStart().toISOString();
    const seen: RequestPage['data'] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const body: RequestPage = await page({ from, limit: '2', ...(cursor ? { after: cursor } : {}) });
      expect(body.object).toBe('list');
      expect(body.data.length).toBeLessThanOrEqual(2);
      expect(body.has_more).toBe(body.next_cursor !== null);
      seen.push(...body.data);
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor && pages < 20);

    const rows = await recordsOf(org.orgId);
    const tied = rows.filter((r) => r.id.startsWith('req_usage_test_cache_'));
    expect(new Set(tied.map((r) => r.createdAt.getTime())).size).toBe(1);
    expect(pages).toBe(6);
    expect(seen.map((r) => r.id).sort()).toEqual(rows.map((r) => r.id).sort());
    const order = [...rows].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    for (let i = 1; i < seen.length; i++)
      expect(Date.parse(seen[i - 1]!.created_at)).toBeGreaterThanOrEqual(Date.parse(seen[i]!.created_at));
    expect(seen.at(-1)!.id).toBe(order.at(-1)!.id);

    const old = rows.find((r) => r.id === oldId)!;
    expect(seen.find((r) => r.id === oldId)).toEqual({
      id: oldId,
      object: 'usage.request',
      created_at: old.createdAt.toISOString(),
      key_id: org.keyId,
      project_id: null,
      model: 'sim-chat',
      endpoint: 'chat.completions',
      prompt_tokens: 1000,
      completion_tokens: 2000,
      total_tokens: 3000,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: '0.00135',
      cost_nanos: '1350000',
      status: 200,
      streamed: false,
      usage_source: 'upstream',
      latency_ms: 5,
      ttft_ms: null,
      cache_hit: false,
      batch_id: null,
    });
    const streamed = seen.filter((r) => r.streamed === true);
    expect(streamed).toHaveLength(2);
    for (const r of streamed) expect(r.ttft_ms).toEqual(expect.any(Number));
    const projected = seen.filter((r) => r.project_id === projectId);
    expect(projected.map((r) => r.key_id)).toEqual([second.keyId, second.keyId, second.keyId]);
  });

  it('lists this month by default, 50 to a page, and applies the filters', async () => {
    const body = await page();
    expect(body.data.map((r) => r.id).sort()).toEqual((await thisMonth()).map((r) => r.id).sort());
    expect(body.has_more).toBe(false);
    expect(body.next_cursor).toBeNull();
    const embeds = await page({ model: 'sim-embed', key_id: second.keyId });
    expect(embeds.data).toHaveLength(1);
    expect(embeds.data[0]).toMatchObject({
      model: 'sim-embed',
      key_id: second.keyId,
      project_id: projectId,
      endpoint: expect.any(String),
    });
  });

  it("never shows one organization another's usage, even when asked by key or project id", async () => {
    const own = await summary({ group_by: 'key' }, other.secret);
    expect(own.totals).toEqual(totalsOf(await thisMonth(other.orgId)));
    expect(own.totals.requests).toBe(1);
    expect(own.data.map((g) => g.key_id)).toEqual([other.keyId]);

    const empty = {
      requests: 0,
      cache_hits: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
      cost: '0.00',
      cost_nanos: '0',
    };
    const filters: Array<Record<string, string>> = [
      { key_id: org.keyId },
      { key_id: second.keyId },
      { project_id: projectId },
    ];
    for (const filter of filters) {
      const body = await summary({ ...filter, group_by: 'model', from: lastMonthStart().toISOString() }, other.secret);
      expect(body.totals).toEqual(empty);
      expect(body.data).toEqual([]);
      const list = await page({ ...filter, from: lastMonthStart().toISOString() }, other.secret);
      expect(list.data).toEqual([]);
      expect(list.has_more).toBe(false);
    }
    const list = await page({ from: lastMonthStart().toISOString() }, other.secret);
    expect(list.data.map((r) => r.key_id)).toEqual([other.keyId]);
  });

  it('answers 401 without a valid key', async () => {
    for (const path of ['/usage/summary', '/usage/requests']) {
      await expectError(await get(path, {}, null), 401, 'unauthorized', 'auth_error');
      await expectError(await get(path, {}, 'sk-not-a-real-key'), 401, 'unauthorized', 'auth_error');
    }
  });

  it('answers 400 invalid_request naming the bad parameter, and ignores unknown ones', async () => {
    const badCursor = Buffer.from('not a time,req_x').toString('base64url');
    const impossibleDay = Buffer.from('2026-02-30T00:00:00.000000Z,req_x').toString('base64url');
    const cases: Array<[string, Record<string, string>, string]> = [
      ['/usage/summary', { from: 'yesterday' }, 'from'],
      ['/usage/summary', { from: '2026-13-01' }, 'from'],
      ['/usage/summary', { to: '2026-01-01T10:00:00' }, 'to'],
      ['/usage/summary', { from: '2026-02-01', to: '2026-01-01' }, 'from'],
      ['/usage/summary', { from: '2026-01-01', to: '2026-01-01' }, 'from'],
      ['/usage/summary', { group_by: 'week' }, 'group_by'],
      ['/usage/summary', { key_id: '' }, 'key_id'],
      ['/usage/requests', { limit: '0' }, 'limit'],
      ['/usage/requests', { limit: '501' }, 'limit'],
      ['/usage/requests', { limit: 'ten' }, 'limit'],
      ['/usage/requests', { limit: '2.5' }, 'limit'],
      ['/usage/requests', { after: 'garbage!' }, 'after'],
      ['/usage/requests', { after: badCursor }, 'after'],
      ['/usage/requests', { after: impossibleDay }, 'after'],
      ['/usage/requests', { from: 'now' }, 'from'],
      // A NUL in a parameter is that parameter's 400, not the "no such route" of a NUL in the path.
      ['/usage/requests', { after: '\u0000' }, 'after'],
      ['/usage/summary', { key_id: 'key_\u0000' }, 'key_id'],
    ];
    for (const [path, query, field] of cases) {
      const error = await expectError(await get(path, query), 400, 'invalid_request', 'invalid_request_error');
      expect({ path, query, details: error.details }).toEqual({
        path,
        query,
        details: expect.arrayContaining([{ field, message: expect.any(String) }]),
      });
    }
    expect((await summary({ colour: 'blue', group_by: 'model' })).group_by).toBe('model');
    expect((await page({ colour: 'blue', limit: '500' })).object).toBe('list');
  });
});
