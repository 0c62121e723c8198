import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { signIn } from '../api/harness.js';

const stores = await availableStores();

/** Names a spreadsheet would run as formulas (none has a comma or quote, so a cell is the text between commas). */
const FORMULAS = ['=HYPERLINK(0)', '+cmd|/C calc!A0', '-2+3', '@SUM(A1)'];

describe.each(stores)("the portal's usage CSV (%s)", (store) => {
  let gateway: TestGateway;
  let cookie: string;
  const requestIds = new Map<string, string>();

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    const { orgs, wallets, users, keys } = gateway.services;
    const org = await orgs.create('csv org');
    await wallets.credit(org.id, 'topup', 5_000_000_000n);
    const user = await users.create({
      orgId: org.id,
      name: 'Csv Owner',
      email: 'csv-owner@example.com',
      password: 'csv-owner-password',
      role: 'owner',
    });
    for (const name of FORMULAS) {
      const { secret } = await keys.create({ orgId: org.id, userId: user.id, name });
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(200);
      requestIds.set(name, response.headers.get('x-request-id')!);
    }
    cookie = (await signIn(gateway, 'csv-owner@example.com', 'csv-owner-password')).cookie!;
  });
  afterAll(() => gateway?.close());

  it('writes a key named like a formula as text, as the costs CSV does: RFC 4180 lines, booleans spelled out', async () => {
    const response = await fetch(`${gateway.url}/portal/usage.csv?window=this-month`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text.endsWith('\r\n')).toBe(true);
    const rows = text
      .trimEnd()
      .split('\r\n')
      .map((line) => line.split(','));
    const header = rows[0]!;
    for (const name of FORMULAS) {
      const row = rows.find((cells) => cells[header.indexOf('request_id')] === requestIds.get(name));
      expect(row, name).toBeDefined();
      expect(row![header.indexOf('key_name')]).toBe(`'${name}`);
      expect(row![header.indexOf('cache_hit')]).toBe('false');
    }
    // No cell of the file would start a formula.
    expect(rows.flat().filter((cell) => /^[=+\-@\t\r]/.test(cell))).toEqual([]);
  });
});
