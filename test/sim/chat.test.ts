import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { countTokens } from '../../src/sim/tokens.js';
import { jsonOf, post, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

async function chat(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const res = await post(sim, '/v1/chat/completions', body);
  return { status: res.status, json: await jsonOf(res) };
}

describe('POST /v1/chat/completions (JSON)', () => {
  it('answers in vLLM shape, every null field present', async () => {
    const { status, json } = await chat({ model: 'sim-chat', messages: userSays('Hello there!') });
    expect(status).toBe(200);
    expect(json).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9a-f]{32}$/),
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'sim-chat',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: expect.any(String),
            refusal: null,
            annotations: null,
            audio: null,
            function_call: null,
            tool_calls: [],
            reasoning: null,
          },
          logprobs: null,
          finish_reason: 'stop',
          stop_reason: null,
          token_ids: null,
        },
      ],
      service_tier: null,
      system_fingerprint: null,
      // 3 text tokens ("Hello", "there", "!") + 3 per message + 3.
      usage: { prompt_tokens: 9, total_tokens: 25, completion_tokens: 16, prompt_tokens_details: null },
      prompt_logprobs: null,
      prompt_token_ids: null,
      kv_transfer_params: null,
    });
    expect(Math.abs(json.created - Date.now() / 1000)).toBeLessThan(5);
    const content: string = json.choices[0].message.content;
    expect(content.split(' ')).toHaveLength(16);
    expect(countTokens(content)).toBe(16);
  });

  it('counts text parts of array content and every message', async () => {
    const { json } = await chat({
      model: 'sim-chat',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi' },
            { type: 'image_url', image_url: { url: 'data:,' } },
            { type: 'text', text: 'you' },
          ],
        },
        { role: 'assistant', content: null },
      ],
    });
    // "Be" "brief" "." + "Hi" "you" = 5, + 3*3 + 3.
    expect(json.usage.prompt_tokens).toBe(17);
  });

  it('is deterministic in (messages, seed)', async () => {
    const text = async (body: Record<string, unknown>): Promise<string> =>
      (await chat({ model: 'sim-chat', ...body })).json.choices[0].message.content;
    const a = await text({ messages: userSays('same prompt') });
    expect(await text({ messages: userSays('same prompt') })).toBe(a);
    expect(await text({ messages: userSays('other prompt') })).not.toBe(a);
    const seeded = await text({ messages: userSays('same prompt'), seed: 7 });
    expect(seeded).not.toBe(a);
    expect(await text({ messages: userSays('same prompt'), seed: 7 })).toBe(seeded);
  });

  it('stops at max_tokens with finish_reason length, and at the natural length otherwise', async () => {
    const short = (await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 5 })).json;
    expect(short.usage.completion_tokens).toBe(5);
    expect(short.choices[0].finish_reason).toBe('length');
    expect(countTokens(short.choices[0].message.content)).toBe(5);

    const long = (await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 100 })).json;
    expect(long.usage.completion_tokens).toBe(16);
    expect(long.choices[0].finish_reason).toBe('stop');
    // The shorter text is a prefix of the natural one.
    expect(long.choices[0].message.content.startsWith(short.choices[0].message.content)).toBe(true);

    const exact = (await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 16 })).json;
    expect(exact.choices[0].finish_reason).toBe('stop');

    const preferred = (
      await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 3, max_completion_tokens: 7 })
    ).json;
    expect(preferred.usage.completion_tokens).toBe(7);

    const stretched = (await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 40, ignore_eos: true }))
      .json;
    expect(stretched.usage.completion_tokens).toBe(40);
    expect(stretched.choices[0].finish_reason).toBe('length');
  });

  it('cuts the natural length at the context window', async () => {
    // 55 text tokens + 6 = 61 of 64: room for 3.
    const { json } = await chat({ model: 'sim-small', messages: userSays('w '.repeat(55)) });
    expect(json.usage.prompt_tokens).toBe(61);
    expect(json.usage.completion_tokens).toBe(3);
    expect(json.choices[0].finish_reason).toBe('length');
  });

  it('puts reasoning in message.reasoning and counts it in completion_tokens', async () => {
    const { json } = await chat({ model: 'sim-think', messages: userSays('Think about it') });
    const message = json.choices[0].message;
    expect(typeof message.reasoning).toBe('string');
    const reasoningTokens = countTokens(message.reasoning);
    expect(reasoningTokens).toBeGreaterThan(0);
    expect(reasoningTokens + countTokens(message.content)).toBe(16);
    expect(json.usage.completion_tokens).toBe(16);
    expect(json.usage.completion_tokens_details).toEqual({ reasoning_tokens: reasoningTokens });
  });

  it('defaults a missing model to the first chat model', async () => {
    const { status, json } = await chat({ messages: userSays('hi') });
    expect(status).toBe(200);
    expect(json.model).toBe('sim-chat');
  });
});

describe('chat errors', () => {
  it('answers bad JSON with a pydantic-style 400', async () => {
    const res = await post(sim, '/v1/chat/completions', '{"model":');
    expect(res.status).toBe(400);
    const body = await jsonOf(res);
    expect(body).toEqual({
      error: { message: expect.stringContaining('json_invalid'), type: 'Bad Request', param: 'body', code: 400 },
    });
  });

  it('answers missing messages with 400 param body.messages', async () => {
    const { status, json } = await chat({ model: 'sim-chat' });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ type: 'Bad Request', param: 'body.messages', code: 400 });
    expect(json.error.message).toContain("'missing'");
  });

  it('rejects wrongly typed fields', async () => {
    const { status, json } = await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 'ten' });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({ type: 'Bad Request', param: 'body.max_tokens' });
    const zero = await chat({ model: 'sim-chat', messages: userSays('x'), max_tokens: 0 });
    expect(zero.status).toBe(400);
    expect(zero.json.error).toMatchObject({ type: 'BadRequestError', param: 'max_tokens' });
  });

  it('answers an unknown model with 404 NotFoundError', async () => {
    const { status, json } = await chat({ model: 'gpt-4', messages: userSays('x') });
    expect(status).toBe(404);
    expect(json).toEqual({
      error: { message: 'The model `gpt-4` does not exist.', type: 'NotFoundError', param: 'model', code: 404 },
    });
  });

  it('refuses chat on an embedding model', async () => {
    const { status, json } = await chat({ model: 'sim-embed', messages: userSays('x') });
    expect(status).toBe(400);
    expect(json.error).toEqual({
      message: 'The model does not support Chat Completions API',
      type: 'BadRequestError',
      param: null,
      code: 400,
    });
  });

  it('refuses stream_options without stream', async () => {
    const { status, json } = await chat({
      model: 'sim-chat',
      messages: userSays('x'),
      stream_options: { include_usage: true },
    });
    expect(status).toBe(400);
    expect(json.error).toMatchObject({
      message: 'Stream options can only be defined when `stream=True`.',
      type: 'BadRequestError',
      param: 'stream_options',
    });
  });

  it('refuses a prompt that fills the context window (param input_tokens)', async () => {
    const { status, json } = await chat({ model: 'sim-small', messages: userSays('w '.repeat(58)) });
    expect(status).toBe(400);
    expect(json.error).toEqual({
      message:
        "This model's maximum context length is 64 tokens. However, your request has 64 input tokens. Please reduce the length of the input messages.",
      type: 'BadRequestError',
      param: 'input_tokens',
      code: 400,
    });
  });

  it('refuses prompt + max_tokens beyond the context window (param max_tokens)', async () => {
    const { status, json } = await chat({ model: 'sim-small', messages: userSays('w '.repeat(44)), max_tokens: 20 });
    expect(status).toBe(400);
    expect(json.error).toEqual({
      message:
        "'max_tokens' or 'max_completion_tokens' is too large: 20. This model's maximum context length is 64 tokens and your request has 50 input tokens (20 > 64 - 50).",
      type: 'BadRequestError',
      param: 'max_tokens',
      code: 400,
    });
  });

  it('checks context length before streaming: a real 400 even with stream true', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-small',
      stream: true,
      messages: userSays('w '.repeat(60)),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect((await jsonOf(res)).error.param).toBe('input_tokens');
  });
});
