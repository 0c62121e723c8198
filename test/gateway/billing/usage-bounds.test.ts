import { createServer, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdFor } from '../../../src/gateway/billing/holds.js';

const holdNanosOf = (...args: Parameters<typeof holdFor>) => holdFor(...args).holdNanos;
import { usageRecords, wallets } from '../../../src/shared/db/schema.js';
import type { Logger } from '../../../src/shared/http/log.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();

/** What the lying engine reports, chosen per request by the body field `lie`. */
const LIES: Record<string, unknown> = {
  huge: { prompt_tokens: 7, completion_tokens: 1_000_000_000, total_tokens: 1_000_000_007 },
  huge_prompt: { prompt_tokens: 10_000_000, completion_tokens: 2, total_tokens: 10_000_002 },
  negative: { prompt_tokens: 7, completion_tokens: -5, total_tokens: 2 },
  fractional: { prompt_tokens: 7.5, completion_tokens: 3, total_tokens: 10.5 },
  missing: undefined,
};

/**
 * An engine on 127.0.0.1 that answers well-formed chat and embeddings with the usage the request
 * asks it to lie about.
 */
function startLyingEngine(): Promise<Server> {
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      if (req.url === '/health') return res.end('ok');
      // Anything else it does not serve (the gateway asks an engine of unnamed kind for `/props`
      // and `/version`): a 404, as vLLM answers.
      if (req.method !== 'POST') return res.writeHead(404).end();
      const body = JSON.parse(text) as { lie: string; stream?: boolean; input?: unknown };
      const usage = LIES[body.lie];
      if (req.url === '/v1/embeddings') {
        res.setHeader('content-type', 'application/json');
        return res.end(
          JSON.stringify({
            object: 'list',
            model: 'liar',
            data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }],
            usage,
          }),
        );
      }
      const message = { role: 'assistant', content: 'twelve chars' };
      if (!body.stream) {
        res.setHeader('content-type', 'application/json');
        return res.end(
          JSON.stringify({
            id: 'c1',
            object: 'chat.completion',
            created: 1,
            model: 'liar',
            choices: [{ index: 0, message, finish_reason: 'stop' }],
            usage,
          }),
        );
      }
      res.setHeader('content-type', 'text/event-stream');
      const chunk = (fields: object) =>
        res.write(
          `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'liar', ...fields })}\n\n`,
        );
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'twelve chars' }, finish_reason: null }] });
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      if (usage) chunk({ choices: [], usage });
      res.end('data: [DONE]\n\n');
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.each(stores)('usage an engine reports is held to what the request could use (%s)', (store) => {
  let engine: Server;
  let dir: string;
  let gateway: TestGateway;
  const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
  const log: Logger = {
    debug() {},
    info() {},
    warn: (message, fields) => void warnings.push({ message, fields }),
    error: (message, fields) => void warnings.push({ message, fields }),
  };

  beforeAll(async () => {
    engine = await startLyingEngine();
    const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-bounds-'));
    const enginesFile = path.join(dir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({
        engines: [
          { kind: 'static', model: 'sim-chat', url, served_model_name: 'liar' },
          { kind: 'static', model: 'sim-embed', url, served_model_name: 'liar' },
        ],
      }),
    );
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: enginesFile }, { log });
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => engine?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function call(secret: string, path: string, body: Record<string, unknown>) {
    const text = JSON.stringify(body);
    const response = await fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: text,
    });
    expect(response.status).toBe(200);
    await response.text();
    // Charges reach PostgreSQL just after the answer (group commit): wait for this gateway's.
    await gateway.services.applier.settled(5_000);
    const [record] = await gateway.services.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.id, response.headers.get('x-request-id')!));
    return { record: record!, bodyBytes: Buffer.byteLength(text) };
  }

  const chat = (lie: string, extra: Record<string, unknown> = {}) => ({
    model: 'sim-chat',
    messages: [{ role: 'user', content: 'hello there' }],
    max_tokens: 10,
    lie,
    ...extra,
  });
  const chatPrice = { inputPerToken: 150n, outputPerToken: 600n };

  it.each([false, true])(
    'charges at most the hold when the engine reports a billion tokens for max_tokens 10 (stream: %s)',
    async (stream) => {
      const tenant = await gateway.tenant({ credit: '10.00' });
      const body = chat('huge', stream ? { stream: true } : {});
      const { record, bodyBytes } = await call(tenant.secret, '/chat/completions', body);
      const hold = holdNanosOf({ bodyBytes, body, task: 'chat', contextLength: 8192 }, chatPrice);
      expect(record).toMatchObject({
        promptTokens: 7,
        completionTokens: 10,
        usageSource: 'clamped',
        cost: 7n * 150n + 10n * 600n,
      });
      expect(record.cost).toBeLessThanOrEqual(hold);
      await gateway.services.applier.settled(5_000);
      const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
      expect(wallet!.balance).toBe(10_000_000_000n - record.cost);
      expect((await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
      const warning = warnings.find((w) => w.fields?.requestId === record.id);
      expect(warning?.message).toMatch(/more tokens than the request could use/);
    },
  );

  it('clamps a prompt count larger than the body could hold, on embeddings too', async () => {
    const tenant = await gateway.tenant();
    const chatCall = await call(tenant.secret, '/chat/completions', chat('huge_prompt'));
    expect(chatCall.record).toMatchObject({
      promptTokens: chatCall.bodyBytes,
      completionTokens: 2,
      usageSource: 'clamped',
    });
    const embedCall = await call(tenant.secret, '/embeddings', {
      model: 'sim-embed',
      input: 'hello',
      lie: 'huge_prompt',
    });
    expect(embedCall.record).toMatchObject({
      promptTokens: embedCall.bodyBytes,
      completionTokens: 0,
      usageSource: 'clamped',
      cost: BigInt(embedCall.bodyBytes) * 20n,
    });
  });

  it.each(['negative', 'fractional', 'missing'])(
    'bills a %s count from an estimate, logged, never from the bad number',
    async (lie) => {
      const tenant = await gateway.tenant();
      const { record } = await call(tenant.secret, '/chat/completions', chat(lie));
      // 'hello there' is 11 characters: 3 tokens, plus 4 per message and 3 for the template;
      // 'twelve chars' is 3 tokens.
      expect(record).toMatchObject({
        promptTokens: 10,
        completionTokens: 3,
        usageSource: 'estimated',
        cost: 10n * 150n + 3n * 600n,
      });
      expect(warnings.find((w) => w.fields?.requestId === record.id)?.message).toMatch(/no valid usage/);
      const embedCall = await call(tenant.secret, '/embeddings', {
        model: 'sim-embed',
        input: 'sixteen letters!',
        lie,
      });
      expect(embedCall.record).toMatchObject({ promptTokens: 4, usageSource: 'estimated' });
    },
  );

  it('counts what it clamped and estimated in /metrics, for the operator only', async () => {
    const unauthorized = await fetch(`${gateway.url}/metrics`);
    expect(unauthorized.status).toBe(401);
    const response = await fetch(`${gateway.url}/metrics`, {
      headers: { authorization: 'Bearer test-operator-token-0123456789' },
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/^tollgate_usage_over_bound_total\{model="sim-chat"\} 3$/m);
    expect(text).toMatch(/^tollgate_usage_over_bound_total\{model="sim-embed"\} 1$/m);
    expect(text).toMatch(/^tollgate_usage_tokens_over_bound_total\{model="sim-chat",kind="completion"\} 1999999980$/m);
    expect(text).toMatch(/^tollgate_usage_estimated_total\{model="sim-chat"\} 3$/m);
  });
});
