import { afterEach, describe, expect, it } from 'vitest';
import { parseSimArgs } from '../../src/sim/cli.js';
import { promptBlockHashes } from '../../src/sim/kv-cache.js';
import type { RunningSimulator, SimulatorOptions } from '../../src/sim/index.js';
import { startSimulator } from '../../src/sim/index.js';
import { until } from '../helpers/wait.js';
import { post } from './helpers.js';

// What tenants sharing one engine get of it: vLLM's `cache_salt` (a prefix cache shared only by
// requests of one salt) and `--scheduling-policy priority` (a better request preempts a worse one
// already running).

const opened: RunningSimulator[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sim) => sim.close()));
});

async function sim(options: Partial<SimulatorOptions> = {}): Promise<RunningSimulator> {
  const started = await startSimulator({
    models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 8192 }],
    loaded: { decodeMsPerStep: 0, prefillMsPerToken: 0 },
    ...options,
  });
  opened.push(started);
  return started;
}

async function metric(s: RunningSimulator, name: string): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  if (!line) throw new Error(`${name} not in /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

const PROMPT = Array.from({ length: 300 }, (_, i) => `secret${i}`).join(' ');

type Usage = { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };

async function cachedTokens(s: RunningSimulator, extra: Record<string, unknown>): Promise<number> {
  const res = await post(s, '/v1/chat/completions', {
    model: 'sim-chat',
    messages: [{ role: 'user', content: PROMPT }],
    max_tokens: 2,
    ...extra,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { usage: Usage }).usage.prompt_tokens_details.cached_tokens;
}

describe('cache_salt', () => {
  it('salts the first block only: every hash differs from the unsalted one, and one salt hashes alike', () => {
    const tokens = Array.from({ length: 8 }, (_, i) => `t${i}`);
    const plain = promptBlockHashes(tokens, 2);
    const salted = promptBlockHashes(tokens, 2, 'org-a');
    expect(salted).toHaveLength(4);
    for (let i = 0; i < 4; i++) expect(salted[i]).not.toBe(plain[i]);
    expect(promptBlockHashes(tokens, 2, 'org-a')).toEqual(salted);
    expect(promptBlockHashes(tokens, 2, 'org-b')[0]).not.toBe(salted[0]);
  });

  it('shares cached blocks only between requests of one salt: another salt, or none, finds nothing of its prefix', async () => {
    const s = await sim();
    expect(await cachedTokens(s, { cache_salt: 'org-a' })).toBe(0);
    expect(await cachedTokens(s, { cache_salt: 'org-b' })).toBe(0);
    expect(await cachedTokens(s, {})).toBe(0);
    const hit = await cachedTokens(s, { cache_salt: 'org-a' });
    expect(hit).toBeGreaterThan(250);
    expect(await cachedTokens(s, { cache_salt: 'org-b' })).toBe(hit);
  });

  it("refuses a salt that is not a non-empty string with vLLM's 400, on chat and completions; null is no salt", async () => {
    const s = await sim();
    for (const [path, body] of [
      ['/v1/chat/completions', { model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] }],
      ['/v1/completions', { model: 'sim-chat', prompt: 'hi' }],
    ] as const) {
      for (const salt of ['', 7, ['a']]) {
        const res = await post(s, path, { ...body, cache_salt: salt });
        expect(res.status).toBe(400);
        const error = ((await res.json()) as { error: { message: string; param: string } }).error;
        expect(error.message).toBe("Parameter 'cache_salt' must be a non-empty string if provided.");
      }
      expect((await post(s, path, { ...body, cache_salt: null })).status).toBe(200);
    }
  });
});

describe('priority scheduling', () => {
  it("refuses a non-zero priority under fcfs, vLLM's default, and takes 0", async () => {
    const s = await sim();
    const body = { model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 };
    const refused = await post(s, '/v1/chat/completions', { ...body, priority: 2 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'Got priority 2 but Priority scheduling is not enabled.',
    );
    expect((await post(s, '/v1/completions', { model: 'sim-chat', prompt: 'hi', priority: 1 })).status).toBe(400);
    expect((await post(s, '/v1/chat/completions', { ...body, priority: 0 })).status).toBe(200);
  });

  it('reads --scheduling-policy as vLLM does, and refuses a choice it does not know', () => {
    const parsed = parseSimArgs(
      ['org/model', '--scheduling-policy', 'priority', '--num-gpu-blocks-override', '64'],
      {},
    );
    expect(parsed.help ? null : parsed.options.schedulingPolicy).toBe('priority');
    expect(parsed.help ? null : (parsed.ignored ?? [])).not.toContain('--scheduling-policy');
    expect(() => parseSimArgs(['org/model', '--scheduling-policy', 'lifo'], {})).toThrow(
      "argument --scheduling-policy: invalid choice: 'lifo' (choose from 'fcfs', 'priority')",
    );
  });

  it('runs a priority-0 request within a step or two of a batch-priority flood filling the batch, preempting it; the flood still streams each token once', async () => {
    // 4 ms a step, 2 sequences at once: the flood of 6 × 150 tokens holds the batch for about 1.8
    // s.
    const s = await sim({ schedulingPolicy: 'priority', loaded: { maxNumSeqs: 2, decodeMsPerStep: 4 } });
    const stream = (priority: number, maxTokens: number) =>
      post(s, '/v1/chat/completions', {
        model: 'sim-chat',
        messages: [{ role: 'user', content: `flood ${Math.random()}` }],
        max_tokens: maxTokens,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
        priority,
      }).then((res) => res.text());
    let floodEnded = 0;
    const flood = Array.from({ length: 6 }, () => stream(3, 150).finally(() => floodEnded++));
    await until(
      'the flood fills the batch and waits',
      async () => (await metric(s, 'vllm:num_requests_waiting')) === 4,
    );
    const urgent = await post(s, '/v1/chat/completions', {
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'urgent' }],
      max_tokens: 1,
      priority: 0,
    });
    expect(urgent.status).toBe(200);
    // Within a step or two, counted in the flood's work rather than in milliseconds: each flood
    // stream needs 150 steps, so none has ended when the urgent one is answered (queued behind it,
    // the urgent one would wait for two to end).
    expect(floodEnded).toBe(0);
    expect(await metric(s, 'vllm:num_preemptions_total')).toBe(1);
    for (const text of await Promise.all(flood)) {
      const chunks = text
        .split('\n')
        .filter((line) => line.startsWith('data: {'))
        .map((line) => JSON.parse(line.slice(6)) as { choices: Array<{ delta: { content?: string } }>; usage?: Usage });
      const tokens = chunks.filter((c) => c.choices[0]?.delta.content).length;
      expect(chunks.at(-1)?.usage?.completion_tokens).toBe(150);
      expect(tokens).toBeLessThanOrEqual(150);
      expect(tokens).toBeGreaterThan(140);
    }
  });
});
