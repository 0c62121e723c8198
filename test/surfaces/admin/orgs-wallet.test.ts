import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin } from './harness.js';

describe('admin API: organizations, projects, wallet', () => {
  let h: Awaited<ReturnType<typeof startAdmin>>;
  beforeAll(async () => {
    h = await startAdmin();
  });
  afterAll(() => h.store.close());

  const newOrg = async (name = 'Acme') => (await h.call('POST', '/orgs', { name })).body.id as string;

  it('creates, lists and reads an organization with an empty wallet', async () => {
    const created = await h.call('POST', '/orgs', { name: 'Acme' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^org_/),
      object: 'organization',
      name: 'Acme',
      share_weight: 1,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      currency: 'USD',
      balance: '0.00',
      balance_nanos: '0',
    });
    const listed = await h.call('GET', '/orgs');
    expect(listed.body.object).toBe('list');
    expect(listed.body.data).toContainEqual(created.body);
    expect((await h.call('GET', `/orgs/${created.body.id}`)).body).toEqual(created.body);
  });

  it("sets an organization's share weight in the fleet's fair share, within 1 to 1000", async () => {
    const created = await h.call('POST', '/orgs', { name: 'Weighted' });
    const set = await h.call('PATCH', `/orgs/${created.body.id}`, { share_weight: 3 });
    expect(set.status).toBe(200);
    expect(set.body.share_weight).toBe(3);
    expect((await h.call('GET', `/orgs/${created.body.id}`)).body.share_weight).toBe(3);
    for (const share_weight of [0, 1001, 1.5, '2']) {
      const refused = await h.call('PATCH', `/orgs/${created.body.id}`, { share_weight });
      expect(refused.status, String(share_weight)).toBe(400);
    }
    expect((await h.call('PATCH', '/orgs/org_missing', { share_weight: 2 })).status).toBe(404);
  });

  it('answers 404 not_found for an unknown organization', async () => {
    for (const path of [
      '/orgs/org_missing',
      '/orgs/org_missing/projects',
      '/orgs/org_missing/wallet',
      '/orgs/org_missing/keys',
    ]) {
      const res = await h.call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await h.call('POST', '/orgs/org_missing/wallet/topups', { amount: '1.00' })).status).toBe(404);
    expect((await h.call('POST', '/orgs/org_missing/projects', { name: 'p' })).status).toBe(404);
  });

  it('refuses a bad body with 400 and field details', async () => {
    const empty = await h.call('POST', '/orgs', { name: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid request body.',
      details: [{ field: 'name', message: 'Must not be empty.' }],
    });
    const extra = await h.call('POST', '/orgs', { name: 'x', nmae: 'typo' });
    expect(extra.body.error.details).toEqual([{ field: 'nmae', message: 'Unknown field.' }]);
    const missing = await h.call('POST', '/orgs', {});
    expect(missing.body.error.details).toEqual([{ field: 'name', message: 'Required.' }]);
    const notObject = await h.call('POST', '/orgs', [1]);
    expect(notObject.body.error.details).toEqual([{ field: 'body', message: 'The body must be a JSON object.' }]);
  });

  it('refuses malformed JSON with 400 invalid_json', async () => {
    const res = await h.call('POST', '/orgs', '{"name": ');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('creates and lists projects', async () => {
    const orgId = await newOrg();
    const created = await h.call('POST', `/orgs/${orgId}/projects`, { name: 'search' });
    expect(created.status).toBe(201);
    // The project as the generic API shows it (one view for both surfaces), marked as a project; an
    // operator's has no creator.
    expect(created.body).toEqual({
      id: expect.stringMatching(/^proj_/),
      object: 'project',
      org_id: orgId,
      name: 'search',
      description: '',
      visibility: 'public',
      created_by: null,
      created_at: expect.any(String),
    });
    expect((await h.call('GET', `/orgs/${orgId}/projects`)).body).toEqual({ object: 'list', data: [created.body] });
  });

  it('tops up exactly: "0.10" ten times is "1.00"', async () => {
    const orgId = await newOrg();
    for (let i = 0; i < 10; i++)
      expect((await h.call('POST', `/orgs/${orgId}/wallet/topups`, { amount: '0.10' })).status).toBe(201);
    const wallet = await h.call('GET', `/orgs/${orgId}/wallet`);
    expect(wallet.body).toMatchObject({
      object: 'wallet',
      org_id: orgId,
      currency: 'USD',
      balance: '1.00',
      balance_nanos: '1000000000',
    });
    expect(wallet.body.ledger).toHaveLength(10);
    expect((await h.call('GET', `/orgs/${orgId}`)).body.balance).toBe('1.00');
  });

  it('returns the wallet with the ledger newest first, and honours limit', async () => {
    const orgId = await newOrg();
    const topup = await h.call('POST', `/orgs/${orgId}/wallet/topups`, { amount: '12.50', note: 'invoice 7' });
    expect(topup.status).toBe(201);
    expect(topup.body.balance).toBe('12.50');
    const adjusted = await h.call('POST', `/orgs/${orgId}/wallet/adjustments`, {
      amount: '-1.25',
      note: 'goodwill reversal',
    });
    expect(adjusted.status).toBe(201);
    expect(adjusted.body).toMatchObject({ balance: '11.25', balance_nanos: '11250000000' });
    expect(adjusted.body.ledger[0]).toEqual({
      id: expect.any(Number),
      kind: 'adjustment',
      amount: '-1.25',
      amount_nanos: '-1250000000',
      balance_after: '11.25',
      balance_after_nanos: '11250000000',
      request_id: null,
      note: 'goodwill reversal',
      created_at: expect.any(String),
    });
    expect(adjusted.body.ledger[1]).toMatchObject({ kind: 'topup', amount: '12.50', note: 'invoice 7' });
    const limited = await h.call('GET', `/orgs/${orgId}/wallet?limit=1`);
    expect(limited.body.ledger.map((e: { kind: string }) => e.kind)).toEqual(['adjustment']);
    for (const limit of ['0', '501', 'abc', '1.5']) {
      const bad = await h.call('GET', `/orgs/${orgId}/wallet?limit=${limit}`);
      expect(bad.status, limit).toBe(400);
      expect(bad.body.error.details[0].field).toBe('limit');
    }
  });

  it('refuses floats, zero, negative top-ups, too many decimals and adjustments without a note', async () => {
    const orgId = await newOrg();
    const cases: [unknown, string][] = [
      [{ amount: 12.5 }, 'not JSON numbers'],
      [{ amount: '0' }, 'greater than 0'],
      [{ amount: '-5.00' }, 'greater than 0'],
      [{ amount: '1.0000000001' }, 'at most 9 decimal places'],
      [{ amount: '1e3' }, 'is not an amount'],
    ];
    for (const [body, message] of cases) {
      const res = await h.call('POST', `/orgs/${orgId}/wallet/topups`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details).toEqual([{ field: 'amount', message: expect.stringContaining(message) }]);
    }
    const noNote = await h.call('POST', `/orgs/${orgId}/wallet/adjustments`, { amount: '-1.00' });
    expect(noNote.body.error.details).toEqual([{ field: 'note', message: 'Required.' }]);
    expect((await h.call('GET', `/orgs/${orgId}/wallet`)).body).toMatchObject({ balance: '0.00', ledger: [] });
  });
});
