import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();
const TIMEOUT_MS = 1_000;
// 120 tokens 100 ms apart: twelve seconds of work, cut by the timeout after about ten. More than a
// checkpoint (100 tokens), so a JSON call is streamed from the engine
// (`requests/engine-stream.ts`).
const ITL_MS = 100;
const MAX_TOKENS = 120;
const STARTING_BALANCE = 5_000_000_000n;

/**
 * `TOLLGATE_UPSTREAM_TIMEOUT_MS` ends an engine call at once, before its answer or in the middle of
 * its stream.
 */
describe.each(stores)('the upstream timeout (%s)', (store) => {
  let sim: RunningSimulator;
  let gateway: TestGateway;

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], ttftMs: 0, itlMs: ITL_MS });
    gateway = await startTestGateway(
      store,
      { TOLLGATE_UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS) },
      { engines: { 'sim-chat': sim.url } },
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  const chat = (secret: string, stream: boolean) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim-chat',
        max_tokens: MAX_TOKENS,
        stream,
        messages: [{ role: 'user', content: 'sixteen letters!' }],
      }),
    });

  it('answers a JSON call the engine has not finished 504, stops the engine, and bills what it produced', async () => {
    const tenant = await gateway.tenant();
    const abortedBefore = sim.stats().aborted;
    const sentAt = performance.now();
    const response = await chat(tenant.secret, false);
    const waited = performance.now() - sentAt;
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({
      error: { type: 'upstream_error', message: 'The model server did not answer in time. Retry later.' },
    });
    expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(waited).toBeLessThan(MAX_TOKENS * ITL_MS);
    await until('the engine counts the request aborted', () => sim.stats().aborted === abortedBefore + 1, {
      timeout: 2_000,
      interval: 10,
    });

    // The engine streams a JSON call too: billed the tokens it produced before the cut (its running
    // count, about ten), as a stream is, and nothing held.
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ streamed: false, status: 504, usageSource: 'upstream' });
    expect(records[0]!.completionTokens).toBeGreaterThan(TIMEOUT_MS / ITL_MS / 2);
    expect(records[0]!.completionTokens).toBeLessThan(MAX_TOKENS);
    expect((await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(STARTING_BALANCE - records[0]!.cost);
  });

  it('ends a stream at the timeout with an error event, stops the engine, and bills what it produced', async () => {
    const tenant = await gateway.tenant();
    const abortedBefore = sim.stats().aborted;
    const sentAt = performance.now();
    const response = await chat(tenant.secret, true);
    expect(response.status).toBe(200);
    const text = await response.text();
    const waited = performance.now() - sentAt;
    expect(waited).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(waited).toBeLessThan(MAX_TOKENS * ITL_MS);
    expect(text).toContain('The model server stopped before finishing this response; the output is incomplete.');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const relayed = text.split('\n\n').filter((event) => event.includes('"delta":{"content"')).length;
    expect(relayed).toBeGreaterThan(0);
    expect(relayed).toBeLessThan(MAX_TOKENS);
    await until('the engine counts the request aborted', () => sim.stats().aborted === abortedBefore + 1, {
      timeout: 2_000,
      interval: 10,
    });

    // Billed for the tokens the engine produced before the cut (its running count), and nothing
    // held.
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]!.streamed).toBe(true);
    expect(records[0]!.completionTokens).toBeGreaterThanOrEqual(relayed);
    expect(records[0]!.completionTokens).toBeLessThan(MAX_TOKENS);
    expect((await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(STARTING_BALANCE - records[0]!.cost);
    expect(records[0]!.cost).toBeGreaterThan(0n);
  });
});
