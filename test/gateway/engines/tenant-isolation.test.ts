import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type Exchange, recordingProxy } from '../../helpers/llama-server.js';

/**
 * Tenants sharing one engine, as hostile tenants try it: organization B sends organization A's
 * exact ~620-token prefix (a secret in A's system prompt) to the loaded simulator (a vLLM with a
 * prefix cache) behind the real gateway. With the organization's cache salt on every request, B
 * finds none of A's blocks: `cached_tokens` 0, billed at the input rate, and its first token no
 * sooner than for a random prefix of that length. Within A the cache still hits. A client's own
 * `cache_salt` is replaced; the band reaches the engine as `priority` only where the engine
 * definition schedules by priority.
 */

const INPUT = 150n; // nano-units a token: 0.15 a million
const CACHED_INPUT = 15n;
const OUTPUT = 600n;

/** About 620 tokens of system prompt, with a secret in it; `tag` makes each one another prefix. */
const secretPrompt = (tag: string) =>
  `${tag} The deployment key is 7f3a-${tag}. ` + Array.from({ length: 600 }, (_, i) => `rule${i}`).join(' ');

type Usage = { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };

describe('tenants isolated in the engines they share', () => {
  let sim: RunningSimulator;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dir: string;
  let gateway: TestGateway;
  const tenants: Record<'a' | 'b', { orgId: string; secret: string }> = {} as never;

  beforeAll(async () => {
    // 1 ms a prompt token: a cold 620-token prefill takes about 0.6 s, a cached one a few ms.
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 8192 }],
      loaded: { decodeMsPerStep: 1, decodeMsPerSeq: 0, prefillMsPerToken: 1 },
      schedulingPolicy: 'priority',
    });
    proxy = await recordingProxy(sim.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-isolation-'));
    const file = path.join(dir, 'engines.json');
    const engines = [
      { kind: 'static', model: 'sim-chat', url: proxy.url },
      // The same engine, said to schedule by priority, under another catalog model.
      {
        kind: 'static',
        model: 'sim-reasoner',
        served_model_name: 'sim-chat',
        url: proxy.url,
        scheduling_policy: 'priority',
      },
    ];
    await writeFile(file, JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file });
    const put = await fetch(`${gateway.url}/admin/v1/prices/sim-chat`, {
      method: 'PUT',
      headers: { authorization: 'Bearer test-operator-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({
        input_per_million: '0.15',
        cached_input_per_million: '0.015',
        output_per_million: '0.60',
      }),
    });
    expect(put.status).toBe(200);
    tenants.a = await gateway.tenant({ credit: '10.00' });
    tenants.b = await gateway.tenant({ credit: '10.00' });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Sends a streamed chat as `who`; its time to the first event, its last usage, and what the
   * engine was sent.
   */
  async function send(
    who: 'a' | 'b',
    system: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ): Promise<{ ttftMs: number; usage: Usage; sent: Record<string, unknown> }> {
    const before = proxy.exchanges.length;
    const started = performance.now();
    const res = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenants[who].secret}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({
        model: 'sim-chat',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: 'hello' },
        ],
        max_tokens: 2,
        stream: true,
        stream_options: { include_usage: true },
        ...extra,
      }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let text = '';
    let ttftMs = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (ttftMs === 0) ttftMs = performance.now() - started;
      text += Buffer.from(value).toString('utf8');
    }
    const usage = text
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { usage?: Usage }).usage)
      .filter((u) => u)
      .at(-1)!;
    await gateway.charged(10_000);
    const exchange = proxy.exchanges.slice(before).find((e: Exchange) => e.path === '/v1/chat/completions')!;
    return { ttftMs, usage, sent: JSON.parse(exchange.request) as Record<string, unknown> };
  }

  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

  it("B sending A's exact prefix finds nothing cached: cached_tokens 0, billed at the input rate, its first token no sooner than a random prefix's", async () => {
    const exact: number[] = [];
    const random: number[] = [];
    for (let i = 0; i < 3; i++) {
      const prefix = secretPrompt(`try${i}`);
      await send('a', prefix);
      // A's cache holds the prefix: A's own repeat finds it.
      const again = await send('a', prefix);
      expect(again.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(550);
      const stolen = await send('b', prefix);
      expect(stolen.usage.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
      exact.push(stolen.ttftMs);
      random.push((await send('b', secretPrompt(`other${i}`))).ttftMs);
    }
    // Both prefill in full (about 0.6 s); a cache hit would answer in a few ms.
    expect(median(exact)).toBeGreaterThan(median(random) * 0.7);
    expect(median(exact)).toBeGreaterThan(300);

    const records = await gateway.services.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.orgId, tenants.b.orgId));
    expect(records.length).toBe(6);
    for (const record of records) {
      expect(record.cachedTokens).toBe(0);
      expect(record.cost).toBe(BigInt(record.promptTokens) * INPUT + BigInt(record.completionTokens) * OUTPUT);
    }
    const own = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenants.a.orgId));
    const hit = own.find((r) => r.cachedTokens > 0)!;
    expect(hit.cost).toBe(
      BigInt(hit.promptTokens - hit.cachedTokens) * INPUT +
        BigInt(hit.cachedTokens) * CACHED_INPUT +
        BigInt(hit.completionTokens) * OUTPUT,
    );
  }, 60_000);

  it("sends each organization a salt of its own that is not its id, and replaces a client's own cache_salt", async () => {
    const prefix = secretPrompt('salts');
    const a = await send('a', prefix);
    const a2 = await send('a', 'short');
    const b = await send('b', 'short');
    expect(a.sent.cache_salt).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a2.sent.cache_salt).toBe(a.sent.cache_salt);
    expect(b.sent.cache_salt).not.toBe(a.sent.cache_salt);
    expect(JSON.stringify(a.sent)).not.toContain(tenants.a.orgId);
    // B learnt A's salt: sending it changes nothing, the engine is sent B's.
    const forged = await send('b', prefix, { cache_salt: a.sent.cache_salt, priority: -5 });
    expect(forged.sent.cache_salt).toBe(b.sent.cache_salt);
    expect(forged.sent).not.toHaveProperty('priority');
    expect(forged.usage.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
  }, 30_000);

  it('sends the band as priority only to an engine defined to schedule by priority', async () => {
    const fcfs = await send('a', 'short');
    expect(fcfs.sent).not.toHaveProperty('priority');
    const prioritized = await send('a', 'short', { model: 'sim-reasoner' });
    expect(prioritized.sent.priority).toBe(3); // the key's band, default, at its own priority (2 × 1 + 1)
    const batch = await send('a', 'short', { model: 'sim-reasoner' }, { 'x-tollgate-band': 'batch' });
    expect(batch.sent.priority).toBe(7);
    expect(batch.sent.cache_salt).toBe(fcfs.sent.cache_salt);
  }, 30_000);
});
