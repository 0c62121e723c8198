import { invalidBody } from './errors.js';
import { isObject } from './fields.js';
import { countTokens, HASH_START, hashText, splitTokens } from './tokens.js';

/** Chat-template overhead: tokens added around each message, and once for the reply. */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_REPLY = 3;

/** What the simulator needs of a chat prompt: its size and a hash for deterministic output. */
export interface PromptMeasure {
  tokens: number;
  hash: number;
}

/**
 * Calls `visit` with each message's role and each of its text pieces (a string
 * content, or the `{type:'text'}` parts of an array), rejecting malformed
 * messages with pydantic-style 400s. Non-text parts are ignored.
 *
 * @example
 * forEachMessageText(messages, (index, role, text) => console.log(role, text));
 */
export function forEachMessageText(
  messages: readonly unknown[],
  visit: (index: number, role: string, text: string | null) => void,
): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!isObject(message)) throw invalidBody(['messages', i], 'model_type', 'Input should be a valid dictionary');
    const role = message.role;
    if (typeof role !== 'string')
      throw invalidBody(['messages', i, 'role'], 'string_type', 'Input should be a valid string');
    const content = message.content;
    visit(i, role, null);
    if (typeof content === 'string') {
      visit(i, role, content);
    } else if (Array.isArray(content)) {
      for (let j = 0; j < content.length; j++) {
        const part: unknown = content[j];
        if (!isObject(part))
          throw invalidBody(['messages', i, 'content', j], 'model_type', 'Input should be a valid dictionary');
        if (part.type === 'text') {
          if (typeof part.text !== 'string') {
            throw invalidBody(['messages', i, 'content', j, 'text'], 'string_type', 'Input should be a valid string');
          }
          visit(i, role, part.text);
        }
      }
    } else if (content !== undefined && content !== null) {
      throw invalidBody(['messages', i, 'content'], 'string_type', 'Input should be a valid string');
    }
  }
}

/**
 * Counts a chat prompt's tokens (text tokens + 3 per message + 3) and hashes
 * roles and texts in one pass.
 *
 * @example
 * measureMessages([{ role: 'user', content: 'Hello' }]); // { tokens: 7, hash: ... }
 */
export function measureMessages(messages: readonly unknown[]): PromptMeasure {
  let tokens = TOKENS_PER_REPLY;
  let hash = HASH_START;
  forEachMessageText(messages, (_index, role, text) => {
    if (text === null) {
      // Start of a message: its template overhead, and a separator so ["ab"] and ["a","b"] differ.
      tokens += TOKENS_PER_MESSAGE;
      hash = hashText(hashText(hash, '\u0000'), role);
      return;
    }
    tokens += countTokens(text);
    hash = hashText(hashText(hash, '\u0001'), text);
  });
  return { tokens, hash };
}

/**
 * A chat prompt's tokens as the simulator's tokenizer sees them, template
 * included (three per message, three for the reply), so there are as many as
 * `measureMessages` counts: what the loaded model's prefix cache hashes.
 *
 * @example
 * promptTokenStrings([{ role: 'system', content: 'Be brief.' }]); // ['<|im_start|>', 'system', '\n', 'Be', 'brief', '.', ...]
 */
export function promptTokenStrings(messages: readonly unknown[]): string[] {
  const tokens: string[] = [];
  forEachMessageText(messages, (_index, role, text) => {
    if (text === null) tokens.push('<|im_start|>', role, '\n');
    else for (const token of splitTokens(text)) tokens.push(token);
  });
  tokens.push('<|im_start|>', 'assistant', '\n');
  return tokens;
}
