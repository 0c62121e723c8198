import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, SIM_WAIT, post, readAll, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

describe('GET /health', () => {
  it('answers 200 with an empty body', async () => {
    const res = await fetch(`${sim.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('answers 503, and so do /v1 routes, until the startup delay passes', async () => {
    const before = performance.now();
    const starting = await startTestSim({ startupDelayMs: 150 });
    try {
      expect((await fetch(`${starting.url}/health`)).status).toBe(503);
      expect((await fetch(`${starting.url}/v1/models`)).status).toBe(503);
      const chat = await post(starting, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('x') });
      expect(chat.status).toBe(503);
      expect((await jsonOf(chat)).error).toMatchObject({ code: 503 });
      // Ready once the delay has passed, and not before.
      await vi.waitFor(async () => expect((await fetch(`${starting.url}/health`)).status).toBe(200), SIM_WAIT);
      expect(performance.now() - before).toBeGreaterThanOrEqual(150);
      expect(
        (await post(starting, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('x') })).status,
      ).toBe(200);
    } finally {
      await starting.close();
    }
  });
});

describe('GET /v1/models', () => {
  it('lists every model in vLLM shape', async () => {
    const body = await jsonOf(fetch(`${sim.url}/v1/models`));
    expect(body.object).toBe('list');
    expect(body.data.map((m: any) => m.id)).toEqual(['sim-chat', 'sim-think', 'sim-small', 'sim-embed']);
    expect(body.data[2]).toEqual({
      id: 'sim-small',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'vllm',
      root: 'sim-small',
      parent: null,
      max_model_len: 64,
      permission: [
        {
          id: expect.stringMatching(/^modelperm-/),
          object: 'model_permission',
          created: expect.any(Number),
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: '*',
          group: null,
          is_blocking: false,
        },
      ],
    });
  });
});

describe('GET /metrics', () => {
  it('exposes vLLM metric names with model_name and engine labels', async () => {
    const fresh = await startTestSim();
    try {
      await jsonOf(post(fresh, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('Hello there!') }));
      await jsonOf(post(fresh, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('x'), max_tokens: 2 }));
      const res = await fetch(`${fresh.url}/metrics`);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      expect(text).toContain('# TYPE vllm:num_requests_running gauge');
      expect(text).toContain('vllm:num_requests_running{engine="0",model_name="sim-chat"} 0.0');
      expect(text).toContain('vllm:num_requests_waiting{engine="0",model_name="sim-chat"} 0.0');
      expect(text).toContain('vllm:prompt_tokens_total{engine="0",model_name="sim-chat"} 16.0');
      expect(text).toContain('vllm:generation_tokens_total{engine="0",model_name="sim-chat"} 18.0');
      expect(text).toContain('vllm:request_success_total{engine="0",finished_reason="stop",model_name="sim-chat"} 1.0');
      expect(text).toContain(
        'vllm:request_success_total{engine="0",finished_reason="length",model_name="sim-chat"} 1.0',
      );
      expect(text).toContain('vllm:kv_cache_usage_perc{engine="0",model_name="sim-embed"} 0.0');
      expect(fresh.stats()).toEqual({
        running: 0,
        waiting: 0,
        aborted: 0,
        completed: 2,
        promptTokens: 16,
        generationTokens: 18,
      });
    } finally {
      await fresh.close();
    }
  });

  it('shows a running request while it generates', async () => {
    const slow = await startTestSim({ itlMs: 20 });
    try {
      const res = await post(slow, '/v1/chat/completions', {
        model: 'sim-think',
        stream: true,
        messages: userSays('x'),
      });
      await vi.waitFor(() => expect(slow.stats().running).toBe(1), SIM_WAIT);
      const text = await (await fetch(`${slow.url}/metrics`)).text();
      expect(text).toContain('vllm:num_requests_running{engine="0",model_name="sim-think"} 1.0');
      expect(text).toMatch(/vllm:kv_cache_usage_perc\{engine="0",model_name="sim-think"\} 0\.000\d+/);
      await readAll(res);
      expect(slow.stats()).toMatchObject({ running: 0, completed: 1 });
    } finally {
      await slow.close();
    }
  });
});

describe('POST /tokenize', () => {
  it('counts a prompt', async () => {
    const body = await jsonOf(post(sim, '/tokenize', { model: 'sim-small', prompt: 'Hello, world!' }));
    expect(body).toEqual({ count: 4, max_model_len: 64, tokens: expect.any(Array), token_strs: null });
    expect(body.tokens).toHaveLength(4);
    expect(body.tokens.every((t: unknown) => Number.isInteger(t))).toBe(true);
  });

  it('counts messages as chat does', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there!' },
    ];
    const body = await jsonOf(post(sim, '/tokenize', { messages, return_token_strs: true }));
    const chat = await jsonOf(post(sim, '/v1/chat/completions', { model: 'sim-chat', messages }));
    expect(body.count).toBe(chat.usage.prompt_tokens);
    expect(body.token_strs).toContain('Hello');
  });

  it('answers 404 for an unknown model', async () => {
    const res = await post(sim, '/tokenize', { model: 'nope', prompt: 'x' });
    expect(res.status).toBe(404);
  });
});

describe('other routes', () => {
  it('answers unknown paths like FastAPI', async () => {
    const res = await fetch(`${sim.url}/v1/completions-nope`);
    expect(res.status).toBe(404);
    expect(await jsonOf(res)).toEqual({ detail: 'Not Found' });
  });

  it('answers a wrong method with 405', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`);
    expect(res.status).toBe(405);
    expect(await jsonOf(res)).toEqual({ detail: 'Method Not Allowed' });
  });

  it('reports a version', async () => {
    expect(await jsonOf(fetch(`${sim.url}/version`))).toEqual({ version: expect.any(String) });
  });
});
