/** Token counts as the gateway bills them. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

/** 'upstream': the engine reported it; 'estimated': a cut stream had to be counted by the gateway. */
export type UsageSource = 'upstream' | 'estimated';

/**
 * Reads an OpenAI/vLLM `usage` object. Returns null unless both counts are
 * non-negative integers: a malformed count must not become a charge.
 *
 * @example
 * usageFrom({ prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 }); // { promptTokens: 12, completionTokens: 8 }
 */
export function usageFrom(value: unknown): TokenUsage | null {
  if (typeof value !== 'object' || value === null) return null;
  const { prompt_tokens: prompt, completion_tokens: completion = 0 } = value as Record<string, unknown>;
  if (!isCount(prompt) || !isCount(completion)) return null;
  return { promptTokens: prompt, completionTokens: completion };
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
      for (const part of content) if (typeof (part as { text?: unknown })?.text === 'string') characters += (part as { text: string }).text.length;
    }
  }
  return Math.ceil(characters / 4) + 4 * messages.length + 3;
}
