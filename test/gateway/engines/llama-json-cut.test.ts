import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { llamaServerMissing, type LlamaServer, recordingProxy, startLlamaServer } from '../../helpers/llama-server.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';

const missing = llamaServerMissing();
skippedWithout(missing);

// The default checkpoint (TOLLGATE_STREAM_CHECKPOINT_TOKENS): a cut call is billed within one.
const CHECKPOINT_TOKENS = 100;

/**
 * llama.cpp's own server behind the gateway: a JSON chat call its client leaves mid-answer is
 * billed the tokens the engine generated, read at the engine (each of its stream's chunks is one
 * token; llama.cpp sends no running usage), within one checkpoint. Before, it was billed its prompt
 * alone.
 */
describe.skipIf(missing !== null)("a JSON call cut mid-answer on llama.cpp's server", () => {
  let server: LlamaServer;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dir: string;
  let gateway: TestGateway;

  beforeAll(async () => {
    server = await startLlamaServer('llama-json-cut');
    proxy = await recordingProxy(server.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-llama-cut-'));
    const file = path.join(dir, 'engines.json');
    await writeFile(file, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', urls: [proxy.url] }] }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file, TOLLGATE_ENGINE_POLL_MS: '200' });
    await until(
      'the replica ready',
      () => gateway.services.fleet.status().some((e) => e.model === 'sim-chat' && e.replicas[0]?.state === 'ready'),
      { timeout: 20_000 },
    );
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await server?.child.stop('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('bills what the engine generated, within one checkpoint', async () => {
    const tenant = await gateway.tenant({ credit: '50.00' });
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const controller = new AbortController();
    const body = { model: 'sim-chat', messages: [{ role: 'user' as const, content: 'Count on.' }], max_tokens: 3_000 };
    const pending = client.chat.completions
      .create({ ...body, ignore_eos: true } as OpenAI.ChatCompletionCreateParamsNonStreaming, {
        signal: controller.signal,
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    await until('the engine generates', () => gateway.services.inFlight.size === 1, { timeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    controller.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    await until('the engine answer recorded', () => proxy.exchanges.some((e) => e.path === '/v1/chat/completions'), {
      timeout: 10_000,
    });
    const exchange = proxy.exchanges.find((e) => e.path === '/v1/chat/completions')!;
    const generated = exchange.response
      .split('\n')
      .filter((line) => line.startsWith('data: {') && /"delta":\{[^}]*"content":"[^"]/.test(line)).length;
    await gateway.charged(10_000);
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(generated).toBeGreaterThan(CHECKPOINT_TOKENS);
    expect(record).toMatchObject({ status: 499, streamed: false });
    expect(record!.completionTokens).toBeLessThanOrEqual(generated);
    expect(record!.completionTokens).toBeGreaterThanOrEqual(generated - CHECKPOINT_TOKENS);
  }, 60_000);
});
