/** What the request path tells an engine about a request, for routing (see `Engine.acquire`). */
export interface RoutingHint {
  /** The client's request body: chat `messages`, completions' `prompt`, embeddings' `input`, the OpenAI `user`. Read only by a router that routes on prefixes. */
  body: Record<string, unknown>;
  /** A session key the client sent (the `x-session-id` header), preferred to `user`. */
  session?: string;
}

/**
 * The prompt as one string, the way a chat template joins it (role, then
 * text, message after message): what the prefix index hashes. Non-text parts
 * are left out. Empty when the body has no prompt.
 *
 * @example
 * renderPrompt({ messages: [{ role: 'system', content: 'Be brief.' }] }); // '<system>\nBe brief.\n'
 */
export function renderPrompt(body: Record<string, unknown>): string {
  const { messages, prompt, input } = body;
  if (Array.isArray(messages)) {
    let text = '';
    for (const message of messages as unknown[]) {
      if (typeof message !== 'object' || message === null) continue;
      const { role, content } = message as { role?: unknown; content?: unknown };
      text += `<${typeof role === 'string' ? role : ''}>\n`;
      if (typeof content === 'string') text += content;
      else if (Array.isArray(content)) for (const part of content as unknown[]) text += textOf(part);
      text += '\n';
    }
    return text;
  }
  if (typeof prompt === 'string') return prompt;
  if (typeof input === 'string') return input;
  return '';
}

function textOf(part: unknown): string {
  if (typeof part !== 'object' || part === null) return '';
  const text = (part as { text?: unknown }).text;
  return typeof text === 'string' ? text : '';
}

/**
 * Chained hashes of a text's full blocks of `blockChars` characters: the
 * hash at a block's end covers every character before it (a running 2×32-bit
 * FNV-1a, read at each block boundary), so equal hashes mean equal prefixes,
 * as vLLM's block hashes do over tokens. The gateway has no tokenizer:
 * 64 characters stand for about 16 tokens, one vLLM block.
 *
 * @example
 * prefixBlockHashes('a'.repeat(130), 64); // two hashes; the last 2 characters make no full block
 */
export function prefixBlockHashes(text: string, blockChars: number): string[] {
  const hashes: string[] = [];
  let low = 0x811c9dc5;
  let high = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    low = Math.imul(low ^ c, 0x01000193) >>> 0;
    high = Math.imul(high ^ c, 0x01000193 + 2) >>> 0;
    if ((i + 1) % blockChars === 0) hashes.push(`${low.toString(36)}.${high.toString(36)}`);
  }
  return hashes;
}

/** The session a request belongs to: the header's key, else the OpenAI `user` field; null without either. */
export function sessionOf(hint: RoutingHint): string | null {
  if (hint.session) return hint.session;
  const user = hint.body.user;
  return typeof user === 'string' && user !== '' ? user : null;
}
