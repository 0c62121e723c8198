import { estimateChatPromptTokens } from '../proxy/usage.js';

type Json = Record<string, unknown>;

/**
 * Keeps the ceiling the client asked for (Messages' `max_tokens`, Responses' `max_output_tokens`, as the translated
 * chat body's `max_tokens`) within the room the prompt leaves in the context, in place. Agents ask a ceiling
 * whatever the model (Claude Code asks 32,000), and vLLM refuses one the context cannot hold beside the prompt; so a
 * ceiling past the room the prompt's estimate leaves is lowered to that room, never removed: without one, the engine
 * generates to the context's end, past what the client asked and was held for. When the estimate leaves no room, 1
 * is sent: the engine, which counts the prompt exactly, answers or refuses (a 400 naming its context length).
 *
 * @example
 * const chat = { messages: [{ role: 'user', content: 'x'.repeat(4000) }], max_tokens: 32000 };
 * keepCeilingWithinContext(chat, 8192); // chat.max_tokens: 8192 - 1007 = 7185
 */
export function keepCeilingWithinContext(chat: Json, contextLength: number): void {
  const asked = chat.max_tokens;
  if (typeof asked !== 'number') return;
  const room = contextLength - estimateChatPromptTokens(chat);
  if (asked > room) chat.max_tokens = Math.max(1, room);
}

/**
 * A translated body's size in bytes as the engine is sent it: the prompt's bound (`billing/token-bounds.ts`: a text
 * token is at least a byte), with every earlier turn, tool and system prompt the translation put in it.
 */
export function sentBytesOf(chat: Json): number {
  return Buffer.byteLength(JSON.stringify(chat), 'utf8');
}
