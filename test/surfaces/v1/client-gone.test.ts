import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();
const TTFT_MS = 3_000;

/**
 * A JSON client that leaves stops the engine's work at once, and is billed for its prompt (status
 * 499).
 */
describe.each(stores)('a JSON client that disconnects (%s)', (store) => {
  let sim: RunningSimulator;
  let gateway: TestGateway;

  beforeAll(async () => {
    // Slow to answer: a client that leaves once its request is at the engine leaves long before the
    // engine would answer.
    sim = await startSimulator({
      models: [
        { name: 'sim-chat', task: 'chat' },
        { name: 'sim-embed', task: 'embedding' },
      ],
      ttftMs: TTFT_MS,
    });
    gateway = await startTestGateway(store, {}, { engines: { 'sim-chat': sim.url, 'sim-embed': sim.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  it.each([
    [
      '/chat/completions',
      { model: 'sim-chat', max_tokens: 50, messages: [{ role: 'user', content: 'sixteen letters!' }] },
      4 + 4 + 3,
    ],
    ['/embeddings', { model: 'sim-embed', input: 'sixteen letters!' }, 4],
  ] as const)('POST %s: aborts upstream at once and bills the prompt only', async (route, body, promptTokens) => {
    const tenant = await gateway.tenant();
    const { aborted: abortedBefore, running: runningBefore, generationTokens: generatedBefore } = sim.stats();
    const client = new AbortController();
    const pending = fetch(`${gateway.baseURL}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: client.signal,
    }).catch((error: unknown) => error);
    await until('the request runs at the engine', () => sim.stats().running === runningBefore + 1, {
      timeout: TTFT_MS,
      interval: 5,
    });
    client.abort();
    expect(await pending).toBeInstanceOf(Error);
    // At once: before the engine's first token (3 s away), counted rather than timed.
    await until('the engine counts the request aborted', () => sim.stats().aborted === abortedBefore + 1, {
      timeout: TTFT_MS,
      interval: 10,
    });
    expect(sim.stats().generationTokens, 'tokens the engine generated before the abort').toBe(generatedBefore);

    // Once the call has ended and its charge is written, nothing more can come: exactly one record.
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({
      status: 499,
      promptTokens,
      completionTokens: 0,
      usageSource: 'estimated',
      streamed: false,
    });
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect((await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
    expect(wallet!.balance).toBe(5_000_000_000n - records[0]!.cost);
  });
});
