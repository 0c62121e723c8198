import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitsEnv, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, uniqueRedisPrefix } from '../../helpers/services.js';

/**
 * Issue 48, item 2: a key's requests per minute and concurrency are taken before the stored
 * conversation is read (and before the translation and the hold), so reading a chain counts against
 * the key like a request. Before, a 1-rpm key had the gateway read and parse the chain once for
 * every request it sent, and was refused after.
 */
const kinds = (await redisAvailable()) ? (['memory', 'redis'] as const) : (['memory'] as const);

describe.each(kinds)('the key limits before the stored conversation (%s)', (kind) => {
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();
  let chainReads = 0;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', limitsEnv(kind, prefix));
    const store = gateway.services.responseStore;
    const chain = store.chain.bind(store);
    store.chain = (orgId, id) => {
      chainReads += 1;
      return chain(orgId, id);
    };
  });
  afterAll(async () => {
    await gateway?.close();
    if (kind === 'redis') await deleteRedisPrefix(prefix);
  });

  const respond = (secret: string, body: Record<string, unknown>) =>
    fetch(`${gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(Object.assign({ model: 'sim-chat', max_output_tokens: 2 }, body)),
    });

  /**
   * A conversation of `turns` stored turns, made with a key of the organization that has no tight
   * limit.
   */
  async function storedChain(secret: string, turns: number): Promise<string> {
    let previous: string | undefined;
    for (let i = 0; i < turns; i++) {
      const response = await respond(secret, {
        input: `turn ${i} ${'words '.repeat(2_000)}`,
        previous_response_id: previous,
      });
      expect(response.status).toBe(200);
      previous = ((await response.json()) as { id: string }).id;
    }
    return previous!;
  }

  it('a 1-rpm key continuing a chain 30 times at once: the chain is read once, 29 get 429 before any read', async () => {
    const { orgId, secret } = await gateway.tenant();
    const last = await storedChain(secret, 5);
    const limited = await gateway.services.keys.create({ orgId, name: 'one a minute', requestsPerMinute: 1 });
    chainReads = 0;
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => respond(limited.secret, { input: 'next', previous_response_id: last })),
    );
    const statuses = answers.map((r) => r.status).sort();
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(29);
    expect(chainReads).toBe(1);
  });

  it('a refusal after the first step gives it back: an unknown previous_response_id takes no count or slot', async () => {
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 2, maxConcurrency: 1 } });
    for (let i = 0; i < 5; i++) {
      const missing = await respond(secret, { input: 'x', previous_response_id: 'resp_missing' });
      expect(missing.status).toBe(404);
      await missing.arrayBuffer();
    }
    const first = await respond(secret, { input: 'x' });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('1');
    await first.arrayBuffer();
  });

  it('a key with no money is refused 402 with nothing left taken: its count is given back', async () => {
    const { secret } = await gateway.tenant({ credit: '0', key: { requestsPerMinute: 1, maxConcurrency: 1 } });
    for (let i = 0; i < 3; i++) {
      const refused = await respond(secret, { input: 'x' });
      expect(refused.status).toBe(402);
      await refused.arrayBuffer();
    }
  });
});
