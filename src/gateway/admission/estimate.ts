import { sequencesOf } from '../billing/token-bounds.js';
import type { ChatJsonMemo } from '../proxy/chat-json.js';
import { estimateChatPromptTokens, estimateInputTokens } from '../proxy/token-counts.js';

/**
 * Tokens a request may use, for the token limits' check before it runs: the
 * prompt as the engine is sent it (about four characters a token, its tools
 * included) plus the most it may generate
 * (`max_completion_tokens` or `max_tokens`, else `completionEstimate`) for
 * each sequence it asks for (`n`, `best_of`).
 * After the request the real usage replaces the estimate.
 *
 * @example
 * estimateRequestTokens({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 }, 'chat', 512); // 108
 */
export function estimateRequestTokens(
  body: Record<string, unknown>,
  task: 'chat' | 'embedding',
  completionEstimate: number,
  json?: ChatJsonMemo,
): number {
  if (task === 'embedding') return estimateInputTokens(body.input);
  const cap = [body.max_completion_tokens, body.max_tokens].find(
    (v): v is number => Number.isSafeInteger(v) && (v as number) > 0,
  );
  return estimateChatPromptTokens(body, json) + (cap ?? completionEstimate) * sequencesOf(body);
}
