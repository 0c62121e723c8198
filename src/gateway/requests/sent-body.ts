import { estimateChatPromptTokens } from '../proxy/token-counts.js';
import { ChatJsonMemo } from '../proxy/chat-json.js';
import { WrittenJson } from '../proxy/client-body.js';

type Json = Record<string, unknown>;

/**
 * Keeps the ceiling the client asked for (Messages' `max_tokens`, Responses' `max_output_tokens`,
 * as the translated chat body's `max_tokens`) within the room the prompt leaves in the context, in
 * place. Agents ask a ceiling whatever the model (Claude Code asks 32,000), and vLLM refuses one
 * the context cannot hold beside the prompt; so a ceiling past the room the prompt's estimate
 * leaves is lowered to that room, never removed: without one, the engine generates to the context's
 * end, past what the client asked and was held for. When the estimate leaves no room, 1 is sent:
 * the engine, which counts the prompt exactly, answers or refuses (a 400 naming its context
 * length).
 *
 * @example
 * const chat = { messages: [{ role: 'user', content: 'x'.repeat(4000) }], max_tokens: 32000 };
 * keepCeilingWithinContext(chat, 8192); // chat.max_tokens: 8192 - 1007 = 7185
 */
export function keepCeilingWithinContext(chat: Json, contextLength: number, json?: ChatJsonMemo): void {
  const asked = chat.max_tokens;
  if (typeof asked !== 'number') return;
  const room = contextLength - estimateChatPromptTokens(chat, json);
  if (asked > room) chat.max_tokens = Math.max(1, room);
}

/**
 * A translated body as the engine is sent it, its JSON written once: its size, and its bytes for
 * one replica.
 */
export interface SentBody {
  /**
   * Its size in bytes: the prompt's bound (`billing/token-bounds.ts`: a text token is at least a
   * byte).
   */
  bytes: number;
  /**
   * Its JSON naming the replica's served model, and on streams asking for a stream with final and
   * running usage.
   */
  forModel(servedModelName: string): string;
  /** The same JSON as bytes, as the engine is sent it: not encoded again for the socket. */
  writtenFor(servedModelName: string): WrittenJson;
}

const COMMA = Buffer.from(',');

/**
 * Writes a translated body's JSON once, with every earlier turn, tool and system prompt the
 * translation put in it: its size is the prompt's bound, and each replica tried is sent it with its
 * own model name put in front (the client's is left out), not the whole body written again. It is
 * kept in parts, never joined: the tools' JSON is the one the estimates measured (`json`, a
 * `ChatJsonMemo`), and each message's is its own, either of which may be the bytes kept from the
 * organization's last turn (`translation-json.ts`), not written or encoded again.
 *
 * @example
 * sentBody({ model: 'm', messages: [] }, false).forModel('served'); // '{"model":"served","messages":[]}'
 */
export function sentBody(chat: Json, streams: boolean, json = new ChatJsonMemo()): SentBody {
  // The members after the opening brace, in the body's own order: `{` + members is the whole body.
  const members: Buffer[] = [];
  // The small members between the large ones, gathered as text and encoded once each run.
  let text = '';
  const flushText = () => {
    if (text) members.push(Buffer.from(text));
    text = '';
  };
  for (const key of Object.keys(chat)) {
    const value = chat[key];
    if (key === 'model' || value === undefined) continue;
    text += `${text || members.length > 0 ? ',' : ''}${JSON.stringify(key)}:`;
    if (key === 'tools' && Array.isArray(value)) {
      flushText();
      members.push(json.toolsBytesOf(value));
    } else if (key === 'messages' && Array.isArray(value)) {
      text += '[';
      value.forEach((message: unknown, i) => {
        if (isObject(message)) {
          flushText();
          if (i > 0) members.push(COMMA);
          members.push(json.messageBytesOf(message));
        } else text += `${i > 0 ? ',' : ''}${JSON.stringify(message) ?? 'null'}`;
      });
      text += ']';
    } else text += JSON.stringify(value);
  }
  text += '}';
  flushText();
  let length = 0;
  for (const member of members) length += member.length;
  // Sent as a stream whatever the client asked (`requests/json-answer.ts` assembles a JSON answer
  // from it), so a call cut at any point is billed the engine's running count.
  const streamMember = streams && chat.stream !== true ? ',"stream":true' : '';
  const usage = streams ? `${streamMember},"stream_options":{"include_usage":true,"continuous_usage_stats":true}` : '';
  const headOf = (servedModelName: string) =>
    Buffer.from(`{"model":${JSON.stringify(servedModelName)}${usage}${length === 1 ? '' : ','}`);
  const writtenFor = (servedModelName: string) =>
    new WrittenJson([headOf(servedModelName), ...members], {
      model: servedModelName,
      messages: chat.messages,
      tools: chat.tools,
    });
  return {
    bytes: 1 + length,
    forModel: (servedModelName) => writtenFor(servedModelName).bytes.toString('utf8'),
    writtenFor,
  };
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
