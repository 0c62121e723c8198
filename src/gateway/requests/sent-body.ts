import { estimateChatPromptTokens, toolsJsonOf } from '../proxy/token-counts.js';
import { WrittenJson } from '../proxy/client-body.js';

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

/** A translated body as the engine is sent it, its JSON written once: its size, and its bytes for one replica. */
export interface SentBody {
  /** Its size in bytes: the prompt's bound (`billing/token-bounds.ts`: a text token is at least a byte). */
  bytes: number;
  /** Its JSON naming the replica's served model, and on streams asking for final and running usage. */
  forModel(servedModelName: string): string;
  /** The same JSON as bytes, as the engine is sent it: not encoded again for the socket. */
  writtenFor(servedModelName: string): WrittenJson;
}

/** Each chat message's JSON, by the message: kept from an organization's last translation (`translation-json.ts`). */
const messageJson = new WeakMap<object, string>();

/** A chat message's JSON, written once however often it is asked for. Messages are never changed once translated. */
export function messageJsonOf(message: object): string {
  let text = messageJson.get(message);
  if (text === undefined) {
    text = JSON.stringify(message);
    messageJson.set(message, text);
  }
  return text;
}

/** Gives a message the JSON already written for a message that writes alike (`translation-json.ts`). */
export function primeMessageJson(message: object, text: string): void {
  messageJson.set(message, text);
}

/**
 * Writes a translated body's JSON once, with every earlier turn, tool and system prompt the translation put in it:
 * its size is the prompt's bound, and each replica tried is sent it with its own model name put in front (the
 * client's is left out), not the whole body written again. The tools' JSON is the one the estimates measured
 * (`toolsJsonOf`), and each message's its own (`messageJsonOf`): either may be the text kept from the
 * organization's last turn (`translation-json.ts`), not written again.
 *
 * @example
 * sentBody({ model: 'm', messages: [] }, false).forModel('served'); // '{"model":"served","messages":[]}'
 */
export function sentBody(chat: Json, streams: boolean): SentBody {
  // The members after the opening brace, in the body's own order: `{` + members is the whole body.
  const parts: string[] = [];
  for (const key of Object.keys(chat)) {
    const value = chat[key];
    if (key === 'model' || value === undefined) continue;
    parts.push(`${JSON.stringify(key)}:${memberJson(key, value)}`);
  }
  const members = `${parts.join(',')}}`;
  const written = Buffer.from(members);
  const usage = streams ? ',"stream_options":{"include_usage":true,"continuous_usage_stats":true}' : '';
  const headOf = (servedModelName: string) =>
    `{"model":${JSON.stringify(servedModelName)}${usage}${members === '}' ? '' : ','}`;
  return {
    bytes: 1 + written.length,
    forModel: (servedModelName) => headOf(servedModelName) + members,
    writtenFor: (servedModelName) =>
      new WrittenJson(Buffer.concat([Buffer.from(headOf(servedModelName)), written]), {
        model: servedModelName,
        messages: chat.messages,
        tools: chat.tools,
      }),
  };
}

/** One member's JSON: the tools' and each message's from their own caches, the rest as `JSON.stringify` writes it. */
function memberJson(key: string, value: unknown): string {
  if (key === 'tools' && Array.isArray(value)) return toolsJsonOf(value);
  if (key === 'messages' && Array.isArray(value))
    return `[${value.map((message) => (isObject(message) ? messageJsonOf(message) : (JSON.stringify(message) ?? 'null'))).join(',')}]`;
  return JSON.stringify(value);
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
