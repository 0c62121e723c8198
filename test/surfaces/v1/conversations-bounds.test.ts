import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/sim/index.js';
import { allItems } from '../../helpers/conversation-turns.js';
import { until } from '../../helpers/wait.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();
const DAY_MS = 86_400_000;
/** Slow to answer: a client that leaves once its turn is at the engine leaves before any token. */
const TTFT_MS = 3_000;

/** The message of a refused call, or 'no error'. */
async function refusal(call: Promise<unknown>): Promise<{ status?: number; message: string }> {
  const error = await call.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof OpenAI.APIError)) return { message: 'no error' };
  return { status: error.status, message: error.message };
}

describe.each(stores)('conversations within their bounds and retention (%s)', (kind) => {
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;
  let sim: RunningSimulator;

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], ttftMs: TTFT_MS });
    gateway = await startTestGateway(
      kind,
      {
        TOLLGATE_CONVERSATIONS_ORG_MAX: '3',
        TOLLGATE_CONVERSATIONS_MAX_ITEMS: '20',
        TOLLGATE_CONVERSATIONS_MAX_BYTES: '4096',
      },
      { engines: { 'sim-chat': sim.url } },
    );
    ({ secret } = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    }));
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  it('appends nothing of a turn whose client left before its end', async () => {
    await gateway.services.conversationStore.purgeExpired(new Date(Date.now() + 400 * DAY_MS));
    const { id } = await client.conversations.create();
    const { aborted, running } = sim.stats();
    const leaving = new AbortController();
    const pending = fetch(`${gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', conversation: id, input: 'Hello?', stream: true }),
      signal: leaving.signal,
    }).then((response) => response.text());
    await until('the turn runs at the engine', () => sim.stats().running === running + 1, {
      timeout: TTFT_MS,
      interval: 5,
    });
    leaving.abort();
    await pending.catch(() => {});
    await until('the engine counts the turn aborted', () => sim.stats().aborted === aborted + 1, { timeout: TTFT_MS });
    await gateway.charged();
    expect(await allItems(client, id)).toEqual([]);
  });

  it('refuses past each bound with a 400 naming its setting, and a full conversation takes no turn', async () => {
    await gateway.services.conversationStore.purgeExpired(new Date(Date.now() + 400 * DAY_MS));
    const twentyOne = Array.from({ length: 21 }, (_, n) => ({ role: 'user' as const, content: `${n}` }));
    expect(await refusal(client.conversations.create({ items: twentyOne }))).toMatchObject({ status: 400 });
    const full = await client.conversations.create({ items: twentyOne.slice(0, 20) });
    const more = await refusal(client.conversations.items.create(full.id, { items: [{ role: 'user', content: 'x' }] }));
    expect(more).toMatchObject({
      status: 400,
      message: expect.stringContaining('TOLLGATE_CONVERSATIONS_MAX_ITEMS=20'),
    });
    const turn = await refusal(client.responses.create({ model: 'sim-chat', input: 'Hi', conversation: full.id }));
    expect(turn).toMatchObject({ status: 400, message: expect.stringContaining('TOLLGATE_CONVERSATIONS_MAX_ITEMS') });

    const small = await client.conversations.create();
    const big = await refusal(
      client.conversations.items.create(small.id, { items: [{ role: 'user', content: 'y'.repeat(5000) }] }),
    );
    expect(big).toMatchObject({
      status: 400,
      message: expect.stringContaining('TOLLGATE_CONVERSATIONS_MAX_BYTES=4096'),
    });
    expect(await allItems(client, small.id)).toEqual([]);

    await client.conversations.create();
    const fourth = await refusal(client.conversations.create());
    expect(fourth).toMatchObject({ status: 400, message: expect.stringContaining('TOLLGATE_CONVERSATIONS_ORG_MAX=3') });
    await client.conversations.delete(small.id);
    await client.conversations.create();
  });

  it('loses no append when many come at once: each item at its own position', async () => {
    await gateway.services.conversationStore.purgeExpired(new Date(Date.now() + 400 * DAY_MS));
    const { id } = await client.conversations.create();
    await Promise.all(
      Array.from({ length: 10 }, (_, n) =>
        client.conversations.items.create(id, { items: [{ role: 'user', content: `parallel ${n}` }] }),
      ),
    );
    const texts = (await allItems(client, id)).map((item) => (item.content as Array<{ text: string }>)[0]!.text);
    expect(texts.sort()).toEqual(Array.from({ length: 10 }, (_, n) => `parallel ${n}`).sort());
  });

  it('purges a conversation past its retention, its items with it, and counts it off its organization', async () => {
    await gateway.services.conversationStore.purgeExpired(new Date(Date.now() + 400 * DAY_MS));
    const kept = await Promise.all(
      [1, 2, 3].map(() => client.conversations.create({ items: [{ role: 'user', content: 'z' }] })),
    );
    expect(await refusal(client.conversations.create())).toMatchObject({ status: 400 });
    const purged = await gateway.services.conversationStore.purgeExpired(new Date(Date.now() + 31 * DAY_MS));
    expect(purged).toBe(3);
    for (const conversation of kept)
      expect(await refusal(client.conversations.retrieve(conversation.id))).toMatchObject({ status: 404 });
    await client.conversations.create();
  });
});
