import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  type Exchange,
  llamaServerMissing,
  type LlamaServer,
  recordingProxy,
  startLlamaServer,
} from '../../helpers/llama-server.js';
import { skippedWithout } from '../../helpers/skips.js';

/**
 * llama.cpp's server cannot salt its prompt cache: a slot reuses the prompt it last held, whoever
 * sent it. Behind the gateway (docs/engines.md, "Tenants in a shared engine"), organization B
 * repeating organization A's exact prompt on the same slot gets no cached tokens (the engine is
 * sent `cache_prompt: false`, and says `cache_n` 0); an engine defined with `cache_sharing:
 * "shared"` reuses it, which is what sharing costs. The timing says the same: B's first token for
 * A's exact prompt is no sooner than for a random prompt of the same length (on the shared engine
 * it is, which is what the test would see without the default). Within one organization nothing is
 * reused either: what llama.cpp's isolation costs.
 */

const missing = llamaServerMissing();
skippedWithout(missing);

type EngineAnswer = { usage?: { prompt_tokens_details?: { cached_tokens?: number } }; timings?: { cache_n?: number } };

describe.skipIf(missing !== null)("llama.cpp's server shared by two organizations", () => {
  let server: LlamaServer;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dir: string;
  let gateway: TestGateway;
  const secrets: Record<'a' | 'b', string> = { a: '', b: '' };

  beforeAll(async () => {
    // One slot: every request lands where the last prompt is held.
    server = await startLlamaServer('llama-tenancy', ['--parallel', '1']);
    proxy = await recordingProxy(server.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-llama-tenancy-'));
    const file = path.join(dir, 'engines.json');
    const engines = [
      { kind: 'static', model: 'sim-chat', engine: 'llamacpp', url: proxy.url },
      { kind: 'static', model: 'sim-reasoner', engine: 'llamacpp', url: proxy.url, cache_sharing: 'shared' },
    ];
    await writeFile(file, JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file });
    secrets.a = (await gateway.tenant({ credit: '10.00' })).secret;
    secrets.b = (await gateway.tenant({ credit: '10.00' })).secret;
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await server?.child.stop('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const PROMPT = `The vault code is 4417. ${Array.from({ length: 150 }, (_, i) => `clause ${i}`).join(', ')}.`;

  /** One chat as `who` on `model`; what the engine was sent and what it answered. */
  async function ask(who: 'a' | 'b', model: string): Promise<{ sent: Record<string, unknown>; answer: EngineAnswer }> {
    const before = proxy.exchanges.length;
    const res = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secrets[who]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 2, cache_prompt: true }),
    });
    expect(res.status).toBe(200);
    await res.json();
    await gateway.charged(10_000);
    const exchange = proxy.exchanges.slice(before).find((e: Exchange) => e.path === '/v1/chat/completions')!;
    return { sent: JSON.parse(exchange.request) as Record<string, unknown>, answer: engineAnswerOf(exchange.response) };
  }

  /**
   * What the engine answered: its JSON, or for a JSON call that may outgrow a checkpoint, streamed
   * from the engine (`requests/engine-stream.ts`), its chunks, later over earlier (the last carry
   * `usage` and `timings`).
   */
  function engineAnswerOf(response: string): EngineAnswer {
    if (response.trimStart().startsWith('{')) return JSON.parse(response) as EngineAnswer;
    const chunks = response
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map((line) => JSON.parse(line.slice(6)) as EngineAnswer);
    return Object.assign({}, ...chunks) as EngineAnswer;
  }

  /**
   * A ~2,700-token prompt, a secret first; `tag` makes another of the same length, sharing no
   * prefix with it (the tiny model prefills it in about a second on 2 loaded cores; a reused slot
   * answers in about 0.1 s).
   */
  const longPrompt = (tag: string) =>
    `The vault code of ${tag} is 4417. ${Array.from({ length: 700 }, (_, i) => `w${i}`).join(' ')}`;

  /** One streamed chat as `who`: its first token (ms), the engine's `cache_n`, the client's count. */
  async function timed(who: 'a' | 'b', model: string, prompt: string) {
    const before = proxy.exchanges.length;
    const started = performance.now();
    const res = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secrets[who]}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: prompt }],
        max_tokens: 2,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    expect(res.status).toBe(200);
    let firstMs = 0;
    let text = '';
    for await (const chunk of res.body!) {
      firstMs ||= performance.now() - started;
      text += Buffer.from(chunk as Uint8Array).toString('utf8');
    }
    await gateway.charged(10_000);
    const exchange = proxy.exchanges.slice(before).find((e: Exchange) => e.path === '/v1/chat/completions')!;
    const cacheN = Number(/"cache_n":(\d+)/.exec(exchange.response)?.[1] ?? 0);
    const cached = Number(/"cached_tokens":(\d+)/.exec(text)?.[1] ?? 0);
    return { firstMs, cacheN, cached };
  }

  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

  /** Three rounds: A sends a prompt, then A again, B the same, B a random one of its length. */
  async function rounds(model: string) {
    const figures = { own: [] as number[], exact: [] as number[], random: [] as number[], ownCacheN: [] as number[] };
    for (let i = 0; i < 3; i++) {
      const prompt = longPrompt(`${model}-a${i}`);
      await timed('a', model, prompt);
      const again = await timed('a', model, prompt);
      figures.own.push(again.firstMs);
      figures.ownCacheN.push(again.cacheN);
      const stolen = await timed('b', model, prompt);
      figures.exact.push(stolen.firstMs);
      if (model === 'sim-chat') expect([stolen.cacheN, stolen.cached]).toEqual([0, 0]);
      figures.random.push((await timed('b', model, longPrompt(`${model}-b${i}`))).firstMs);
    }
    return figures;
  }

  it("B's first token for A's exact prompt is no sooner than for a random one; A's own repeat reuses nothing either", async () => {
    const isolated = await rounds('sim-chat');
    expect(isolated.ownCacheN).toEqual([0, 0, 0]);
    expect(median(isolated.exact)).toBeGreaterThan(median(isolated.random) * 0.7);
    // The control: on the shared engine A's prompt is reused by B, and sooner than a random one.
    const shared = await rounds('sim-reasoner');
    expect(Math.min(...shared.ownCacheN)).toBeGreaterThan(2_500);
    expect(median(shared.exact)).toBeLessThan(median(shared.random));
  }, 120_000);

  it("B repeating A's exact prompt on A's slot gets no cached tokens; a client's cache_prompt is overridden", async () => {
    await ask('a', 'sim-chat');
    const stolen = await ask('b', 'sim-chat');
    expect(stolen.sent.cache_prompt).toBe(false);
    expect(stolen.answer.timings?.cache_n ?? 0).toBe(0);
    expect(stolen.answer.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
  }, 60_000);

  it('an engine shared on purpose reuses the prompt across organizations: what sharing costs', async () => {
    await ask('a', 'sim-reasoner');
    const shared = await ask('b', 'sim-reasoner');
    expect(shared.sent).not.toHaveProperty('cache_prompt');
    expect(shared.answer.timings?.cache_n ?? 0).toBeGreaterThan(100);
  }, 60_000);
});
