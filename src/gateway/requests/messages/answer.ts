import { randomUUID } from 'node:crypto';
import type { TokenUsage } from '../../billing/token-usage.js';
import { usageFrom } from '../../proxy/token-counts.js';

type Json = Record<string, unknown>;

/**
 * Chat's finish reasons as Anthropic's stop reasons. An answer that calls a
 * tool stops for `tool_use` whatever its finish reason: vLLM says `stop` for a
 * tool named in `tool_choice`, and Anthropic's clients run tools on `tool_use`.
 */
export function stopReasonOf(finishReason: unknown, stopText: unknown, calledTools = false): string {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'tool_calls' || calledTools) return 'tool_use';
  return typeof stopText === 'string' ? 'stop_sequence' : 'end_turn';
}

export function messageId(): string {
  return `msg_${randomUUID().replaceAll('-', '')}`;
}

/**
 * Parses a tool call's arguments; an engine's malformed JSON becomes `{}`, as a client could not
 * use it anyway.
 */
export function toolInput(text: unknown): unknown {
  try {
    const value: unknown = JSON.parse(typeof text === 'string' && text ? text : '{}');
    return typeof value === 'object' && value !== null ? value : {};
  } catch {
    return {};
  }
}

/**
 * The engine's chat completion as an Anthropic message: reasoning as a
 * `thinking` block, the text, each tool call as a `tool_use` block; the
 * usage the engine reported (the gateway bills the same numbers).
 *
 * @example
 * messageOf({ choices: [{ message: { content: 'Hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1 } }, 'claude-ish');
 */
export function messageOf(answer: Json, model: string): Json {
  const choice = ((answer.choices as Json[] | undefined) ?? [])[0] ?? {};
  const message = (choice.message ?? {}) as Json;
  const content: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (typeof reasoning === 'string' && reasoning)
    content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  if (typeof message.content === 'string' && message.content) content.push({ type: 'text', text: message.content });
  for (const call of (message.tool_calls as Json[] | undefined) ?? []) {
    const fn = (call.function ?? {}) as Json;
    content.push({ type: 'tool_use', id: call.id, name: fn.name, input: toolInput(fn.arguments) });
  }
  const usage = usageFrom(answer.usage);
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReasonOf(
      choice.finish_reason,
      choice.stop_reason,
      content.some((block) => block.type === 'tool_use'),
    ),
    stop_sequence: typeof choice.stop_reason === 'string' ? choice.stop_reason : null,
    usage: messagesUsage(usage),
  };
}

/**
 * The billed usage as the Messages API's (Anthropic's convention): `input_tokens` EXCLUDES the
 * prompt tokens read from the prefix cache, which are `cache_read_input_tokens`; the engine writes
 * its cache unasked and unbilled, so `cache_creation_input_tokens` is 0. `output` stands in for a
 * completion count the engine has not reported.
 *
 * @example
 * messagesUsage({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 });
 * // { input_tokens: 200, cache_creation_input_tokens: 0, cache_read_input_tokens: 800, output_tokens: 10 }
 */
export function messagesUsage(usage: TokenUsage | null, output = 0) {
  const cached = usage?.cachedTokens ?? 0;
  return {
    input_tokens: (usage?.promptTokens ?? 0) - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: usage?.completionTokens ?? output,
  };
}
