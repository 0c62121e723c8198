import type { ChatJsonMemo } from './chat-json.js';
import type { TokenUsage } from '../billing/token-usage.js';

/**
 * Reads an OpenAI/vLLM `usage` object. Returns null unless both counts are
 * non-negative integers: a malformed count must not become a charge. The
 * details vLLM (`--enable-prompt-tokens-details`) and llama.cpp report are
 * read too: `prompt_tokens_details.cached_tokens` (inside `prompt_tokens`) and
 * `completion_tokens_details.reasoning_tokens` (inside `completion_tokens`).
 * A malformed detail counts as none (the prompt is then billed at the full
 * input price), and a detail above its total is held to it.
 *
 * @example
 * usageFrom({ prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 }); // { promptTokens: 12, completionTokens: 8 }
 * usageFrom({ prompt_tokens: 12, completion_tokens: 8, prompt_tokens_details: { cached_tokens: 10 } });
 * // { promptTokens: 12, completionTokens: 8, cachedTokens: 10 }
 */
export function usageFrom(value: unknown): TokenUsage | null {
  if (typeof value !== 'object' || value === null) return null;
  const fields = value as Record<string, unknown>;
  const { prompt_tokens: prompt, completion_tokens: completion = 0 } = fields;
  if (!isCount(prompt) || !isCount(completion)) return null;
  const usage: TokenUsage = { promptTokens: prompt, completionTokens: completion };
  const cached = detail(fields.prompt_tokens_details, 'cached_tokens');
  if (cached) usage.cachedTokens = Math.min(cached, prompt);
  const reasoning = detail(fields.completion_tokens_details, 'reasoning_tokens');
  if (reasoning) usage.reasoningTokens = Math.min(reasoning, completion);
  return usage;
}

// One count of a `…_details` object; 0 when the object or the count is absent or malformed.
function detail(details: unknown, field: string): number {
  if (typeof details !== 'object' || details === null) return 0;
  const count = (details as Record<string, unknown>)[field];
  return isCount(count) ? count : 0;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A stand-in prompt count, for the token limits' check before a request and
 * for a stream that ended before the engine reported any usage: about four
 * characters a token (the usual rule of thumb for English text with BPE
 * tokenizers), plus the chat template's few tokens per message.
 */
export function estimatePromptTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let characters = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (typeof content === 'string') characters += content.length;
    else if (Array.isArray(content)) {
      for (const part of content)
        if (typeof (part as { text?: unknown })?.text === 'string')
          characters += (part as { text: string }).text.length;
    }
  }
  return Math.ceil(characters / 4) + 4 * messages.length + 3;
}

/**
 * A chat body's prompt as the engine's chat template renders it, estimated: its messages (system
 * prompt included) as `estimatePromptTokens` counts them, and its tools' definitions at about four
 * characters a token.
 */
export function estimateChatPromptTokens(body: Record<string, unknown>, json?: ChatJsonMemo): number {
  const text = !Array.isArray(body.tools) ? '' : json ? json.toolsJsonOf(body.tools) : JSON.stringify(body.tools);
  const tools = Math.ceil(text.length / 4);
  return estimatePromptTokens(body.messages) + tools;
}

/** Embedding inputs' tokens, about four characters a token (token-id arrays count one each). */
export function estimateInputTokens(input: unknown): number {
  const items = Array.isArray(input) && !input.every((item) => typeof item === 'number') ? input : [input];
  let tokens = 0;
  for (const item of items) {
    if (typeof item === 'string') tokens += Math.ceil(item.length / 4);
    else if (Array.isArray(item)) tokens += item.length; // token ids
  }
  return Math.max(1, tokens);
}

/**
 * A JSON chat answer's completion tokens, about four characters a token, for an engine that
 * reported none.
 */
export function estimateCompletionTokens(choices: unknown): number {
  if (!Array.isArray(choices)) return 0;
  let characters = 0;
  for (const choice of choices) {
    const message = (choice as { message?: Record<string, unknown> } | null)?.message;
    for (const field of ['content', 'reasoning_content', 'reasoning']) {
      if (typeof message?.[field] === 'string') characters += message[field].length;
    }
    if (message?.tool_calls !== undefined) characters += JSON.stringify(message.tool_calls).length;
  }
  return Math.ceil(characters / 4);
}
