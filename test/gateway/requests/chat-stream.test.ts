import { describe, expect, it } from 'vitest';
import { createChatChunkRewriter, type ChatStreamOptions } from '../../../src/gateway/requests/chat-stream.js';
import { withoutNullFields } from '../../../src/gateway/proxy/openai-shape.js';
import { usageFrom } from '../../../src/gateway/proxy/token-counts.js';

const HEAD =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732363200,"model":"Qwen/Qwen2.5-7B-Instruct","choices":[';
const USAGE = '"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}';

/**
 * Chunks as vLLM and the simulator write them, and unusual ones: spaced, usage first, nulls OpenAI
 * never sends, the model named in the text.
 */
const CHUNKS = {
  first: `${HEAD}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  token: `${HEAD}{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  last: `${HEAD}{"index":0,"delta":{"content":"."},"logprobs":null,"finish_reason":"stop","stop_reason":null}],${USAGE}}`,
  withoutUsage: `${HEAD}{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}`,
  usageOnly: `${HEAD}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8,"prompt_tokens_details":null}}`,
  nullUsage: `${HEAD}{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}],"usage":null}`,
  vllmNulls: `${HEAD}{"index":0,"delta":{"content":"x","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"token_ids":null}],"prompt_token_ids":null,${USAGE}}`,
  modelInText: `${HEAD}{"index":0,"delta":{"content":"\\"model\\":\\"Qwen/Qwen2.5-7B-Instruct\\" and :null"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  spaced: `{"id": "c", "object": "chat.completion.chunk", "model": "Qwen/Qwen2.5-7B-Instruct", "choices": [{"index": 0, "delta": {"content": "y"}, "finish_reason": null}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}`,
  usageFirst: `{"id":"c","usage":{"prompt_tokens":1,"completion_tokens":1},"model":"Qwen/Qwen2.5-7B-Instruct","choices":[{"index":0,"delta":{"content":"z"},"finish_reason":null}]}`,
  reasoning: `${HEAD}{"index":0,"delta":{"reasoning":"think","reasoning_content":"think"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  reasoningOnly: `${HEAD}{"index":0,"delta":{"reasoning_content":"hmm"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  escapes: `${HEAD}{"index":0,"delta":{"content":"caf\\u00e9 \\/ \\\\ \\n \\ud83d\\ude00"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  emptyContent: `${HEAD}{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  rawControl: `${HEAD}{"index":0,"delta":{"content":"a\tb"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  leadingZero: `{"id":"c","object":"chat.completion.chunk","created":0123,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}]}`,
  hugeUsage: `${HEAD}{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":9007199254740993,"total_tokens":9007199254740994,"completion_tokens":1}}`,
  badEscape: `${HEAD}{"index":0,"delta":{"content":"\\q"},"logprobs":null,"finish_reason":null}],${USAGE}}`,
  errorEvent: `{"error":{"message":"boom","type":"InternalServerError","code":500}}`,
};

const OPTIONS: ChatStreamOptions[] = [
  { clientModel: 'qwen', includeUsage: false, continuousUsage: false },
  { clientModel: 'qwen', includeUsage: true, continuousUsage: false },
  { clientModel: 'Qwen "7B" é', includeUsage: true, continuousUsage: true },
];

/**
 * What the client must get, from the parsed chunk: the client model, nulls OpenAI never sends
 * dropped, usage where asked for.
 */
function rebuilt(data: string, options: ChatStreamOptions): unknown {
  let chunk: Record<string, unknown>;
  try {
    chunk = JSON.parse(data) as Record<string, unknown>;
  } catch {
    return null; // not JSON: dropped
  }
  if (chunk.error !== undefined) return 'error';
  const choices = chunk.choices as unknown[];
  if (choices.length === 0 && chunk.usage)
    return options.includeUsage ? withoutNullFields({ ...chunk, model: options.clientModel }) : null;
  // Usage whose counts are not counts (a 2^53, a string) is never shown: it is not what is billed.
  const shown = options.continuousUsage && usageFrom(chunk.usage) !== null;
  return withoutNullFields({ ...chunk, model: options.clientModel }, shown ? undefined : 'usage');
}

describe('the chat stream rewriter', () => {
  for (const options of OPTIONS) {
    it(`gives every chunk as rebuilding it would (include_usage ${options.includeUsage}, continuous ${options.continuousUsage})`, () => {
      for (const [name, data] of Object.entries(CHUNKS)) {
        const { rewrite } = createChatChunkRewriter(options);
        const out = rewrite(data);
        const expected = rebuilt(data, options);
        if (expected === null) expect(out, name).toBeNull();
        else if (expected === 'error') expect(JSON.parse(out!).error.code, name).toBe('upstream_error');
        else expect(JSON.parse(out!), name).toEqual(expected);
      }
    });
  }

  it('gives a usual chunk as the engine wrote it, but for the model and the hidden usage', () => {
    const { rewrite } = createChatChunkRewriter(OPTIONS[0]!);
    expect(rewrite(CHUNKS.token)).toBe(
      CHUNKS.token.replace('"model":"Qwen/Qwen2.5-7B-Instruct"', '"model":"qwen"').replace(`,${USAGE}`, ''),
    );
  });

  it('counts tokens and reads usage from every chunk as from the parsed chunk', () => {
    for (const [name, data] of Object.entries(CHUNKS)) {
      let chunk: { choices?: Array<{ delta?: Record<string, unknown> }>; usage?: Record<string, unknown> };
      try {
        chunk = JSON.parse(data) as typeof chunk;
      } catch {
        continue;
      }
      const { rewrite, state } = createChatChunkRewriter(OPTIONS[0]!);
      rewrite(data);
      const delta = chunk.choices?.[0]?.delta ?? {};
      const tokens = Boolean(delta.content || delta.reasoning || delta.reasoning_content || delta.tool_calls);
      expect(state.tokenChunks, name).toBe(tokens ? 1 : 0);
      const usage = chunk.usage;
      const exact = usage && Number.isSafeInteger(usage.prompt_tokens) && Number.isSafeInteger(usage.completion_tokens);
      expect(state.usage, name).toEqual(
        exact ? { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens } : null,
      );
    }
  });

  it('keeps counting tokens and usage, whichever way the chunk is written', () => {
    const { rewrite, state } = createChatChunkRewriter(OPTIONS[0]!);
    for (const data of [CHUNKS.first, CHUNKS.token, CHUNKS.vllmNulls, CHUNKS.last, CHUNKS.usageOnly]) rewrite(data);
    expect(state).toMatchObject({
      usage: { promptTokens: 12, completionTokens: 8 },
      usageFinal: true,
      tokenChunks: 3,
      failed: false,
    });
  });
});
