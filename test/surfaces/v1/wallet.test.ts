import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

// GET /v1/wallet: what a tool on the key (tollgate code) shows as the balance.
describe('GET /v1/wallet', () => {
  let gateway: TestGateway;
  beforeAll(async () => (gateway = await startTestGateway('pglite')), 60_000);
  afterAll(() => gateway?.close());

  const wallet = (secret: string, query = '') =>
    fetch(`${gateway.baseURL}/wallet${query}`, { headers: { authorization: `Bearer ${secret}` } });

  it("answers the key's own organization's balance, exactly, and never another's", async () => {
    const mine = await gateway.tenant({ credit: '12.345678901' });
    const theirs = await gateway.tenant({ credit: '99.00' });
    // A hostile key names the other organization every way it might be read: it is ignored.
    const response = await wallet(mine.secret, `?org_id=${theirs.orgId}&orgId=${theirs.orgId}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      object: 'wallet',
      currency: 'USD',
      balance: '12.345678901',
      balance_nanos: '12345678901',
    });
    expect(await (await wallet(theirs.secret)).json()).toMatchObject({ balance: '99.00' });
  });

  it('includes the charge of a call that just ended: read your writes, declared on the route', async () => {
    const tenant = await gateway.tenant({ credit: '10.00' });
    const chat = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 8 }),
    });
    expect(chat.status).toBe(200);
    await chat.json();
    // At once, with no wait for the charge to be written: the route waits for this replica's
    // journaled charges.
    const atOnce = (await (await wallet(tenant.secret)).json()) as { balance_nanos: string };
    await gateway.charged();
    const settled = (await (await wallet(tenant.secret)).json()) as { balance_nanos: string };
    expect(BigInt(settled.balance_nanos)).toBeLessThan(10_000_000_000n);
    expect(atOnce.balance_nanos).toBe(settled.balance_nanos);
  });

  it('needs a valid key', async () => {
    expect((await wallet('tg-not-a-key')).status).toBe(401);
  });
});
