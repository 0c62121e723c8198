import { eq, sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { ledgerEntries, usageRecords } from '../../../src/shared/db/schema.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();

describe.each(stores)('wallet charges (%s)', (store) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    // A small inter-token delay, so a client can leave while a stream is still generating.
    gateway = await startTestGateway(store, { TOLLGATE_SIM_ITL_MS: '5' });
  });
  afterAll(() => gateway?.close());

  /**
   * The balance once this gateway's charges are written (they reach PostgreSQL just after each
   * answer).
   */
  const balanceAfterCharges = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.wallets.balance(orgId);
  };

  /**
   * The org's usage records once this gateway's charges are written (they reach PostgreSQL just
   * after each answer).
   */
  const recordsOf = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId));
  };

  it('leaves a balance equal to the credit less the sum of the usage records, exactly', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const seen: Array<{ prompt: number; completion: number }> = [];
    for (let i = 0; i < 3; i++) {
      const completion = await client.chat.completions.create({
        model: 'sim-chat',
        messages: [{ role: 'user', content: `request ${i}` }],
      });
      seen.push({ prompt: completion.usage!.prompt_tokens, completion: completion.usage!.completion_tokens });
    }
    const stream = await client.chat.completions.create({
      model: 'sim-reasoner',
      stream: true,
      messages: [{ role: 'user', content: 'stream' }],
    });
    for await (const _ of stream) void _;
    const usageStream = await client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'stream with usage' }],
    });
    for await (const chunk of usageStream)
      if (chunk.usage) seen.push({ prompt: chunk.usage.prompt_tokens, completion: chunk.usage.completion_tokens });
    const embedding = await client.embeddings.create({ model: 'sim-embed', input: ['a b c', 'd e'] });
    seen.push({ prompt: embedding.usage.prompt_tokens, completion: 0 });

    const records = await recordsOf(tenant.orgId);
    expect(records).toHaveLength(6);
    const spent = records.reduce((sum, r) => sum + r.cost, 0n);
    expect(spent).toBeGreaterThan(0n);
    const balance = await balanceAfterCharges(tenant.orgId);
    expect(balance).toBe(parseAmount('1.00') - spent);

    // Each record is priced exactly from its tokens (sim-chat 150/600, sim-reasoner 300/1200,
    // sim-embed 20/0 nanos per token).
    const perToken: Record<string, [bigint, bigint]> = {
      'sim-chat': [150n, 600n],
      'sim-reasoner': [300n, 1200n],
      'sim-embed': [20n, 0n],
    };
    for (const record of records) {
      const [input, output] = perToken[record.modelId]!;
      expect(record.cost).toBe(BigInt(record.promptTokens) * input + BigInt(record.completionTokens) * output);
      expect(record.usageSource).toBe('upstream');
      expect(record.keyId).toBe(tenant.keyId);
    }
    // What the client was told is what it was billed for.
    const billed = records.map((r) => ({ prompt: r.promptTokens, completion: r.completionTokens }));
    for (const usage of seen) expect(billed).toContainEqual(usage);

    // The ledger sums to the balance.
    const [ledger] = await gateway.services.db
      .select({ total: sql<string>`sum(${ledgerEntries.amount})::text` })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(BigInt(ledger!.total)).toBe(balance);
  });

  it('bills a stream the client abandons: more than zero, less than the whole', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const full = await client.chat.completions.create({
      model: 'sim-chat',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'long' }],
    });
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'sim-chat', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'long' }] },
      { signal: controller.signal },
    );
    let received = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) received += 1;
      if (received === 3) {
        controller.abort();
        break;
      }
    }
    // The charge lands when the gateway notices the client left; then nothing more can come.
    await gateway.charged();
    const records = await recordsOf(tenant.orgId);
    expect(records).toHaveLength(2);
    const aborted = records.find((r) => r.streamed)!;
    const complete = records.find((r) => !r.streamed)!;
    expect(aborted.status).toBe(499);
    expect(aborted.cost).toBeGreaterThan(0n);
    expect(aborted.completionTokens).toBeGreaterThanOrEqual(3);
    expect(aborted.completionTokens).toBeLessThan(full.usage!.completion_tokens);
    expect(aborted.cost).toBeLessThan(complete.cost);
  });

  it('charges nothing twice for a repeated write of the same request', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const record = {
      id: 'req_duplicate_test',
      orgId: tenant.orgId,
      keyId: tenant.keyId,
      projectId: null,
      modelId: 'sim-chat',
      endpoint: 'chat.completions',
      promptTokens: 10,
      completionTokens: 10,
      cost: 7_500n,
      status: 200,
      streamed: false,
      usageSource: 'upstream',
      latencyMs: 1,
      ttftMs: null,
    };
    expect(await gateway.services.wallets.charge(record)).toBe(true);
    expect(await gateway.services.wallets.charge(record)).toBe(false);
    expect(await balanceAfterCharges(tenant.orgId)).toBe(parseAmount('1.00') - 7_500n);
  });
});
