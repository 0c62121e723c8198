import { TEXT_PARTS } from '../../stored-responses/kept.js';
import { COMPACTION_TYPES, compactionMessage } from './compaction-item.js';

type Json = Record<string, unknown>;

/**
 * A Responses `input` as items: a string is one user message. Items without a
 * `type` but with a `role` are messages (OpenAI's "easy input message").
 *
 * @example
 * inputItemsOf('Hi'); // [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] }]
 */
export function inputItemsOf(input: unknown): Json[] {
  if (typeof input === 'string')
    return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  return (input as Json[]).map((item) =>
    item.type === undefined && typeof item.role === 'string' ? Object.assign({ type: 'message' }, item) : item,
  );
}

/**
 * Where a translation gathers its chat messages: system text apart (chat templates want it first),
 * the rest in order.
 */
interface Conversation {
  system: string[];
  messages: Json[];
}

/**
 * Items (this turn's input, and earlier turns' inputs and outputs) as chat
 * messages, system and developer text gathered apart. A run of function calls
 * joins the assistant message before it; each call's output becomes a tool
 * message; a `compaction` item (`POST /v1/responses/compact`'s) becomes its summary, a user
 * message. Reasoning items have no place in chat and are dropped, as are references and the
 * calls of built-in tools the engine never ran.
 */
export function gatherItems(items: Json[], into: Conversation): void {
  for (const item of items) {
    if (item.type === 'message') messageOf(item, into);
    else if (item.type === 'function_call')
      addToolCall(into.messages, item.call_id, qualifiedName(item), argumentsText(item.arguments));
    else if (item.type === 'custom_tool_call')
      addToolCall(into.messages, item.call_id, item.name, JSON.stringify({ input: item.input ?? '' }));
    else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      into.messages.push({ role: 'tool', tool_call_id: item.call_id, content: outputText(item.output) });
    } else if (COMPACTION_TYPES.has(item.type as string)) into.messages.push(compactionMessage(item));
  }
}

/**
 * A namespaced function's name as the engine knows it (`translate.ts` flattens namespaces the same
 * way).
 */
export function qualifiedName(item: Json): unknown {
  return typeof item.namespace === 'string' && item.namespace ? `${item.namespace}__${String(item.name)}` : item.name;
}

function messageOf(item: Json, into: Conversation): void {
  const role = item.role;
  if (role === 'system' || role === 'developer') {
    const text = textOf(item.content);
    if (text) into.system.push(text);
    return;
  }
  if (role === 'assistant') {
    into.messages.push({ role: 'assistant', content: textOf(item.content) });
    return;
  }
  into.messages.push({
    role: 'user',
    content: typeof item.content === 'string' ? item.content : userParts(item.content as Json[]),
  });
}

function addToolCall(messages: Json[], callId: unknown, name: unknown, args: string): void {
  const call = { id: callId, type: 'function', function: { name, arguments: args } };
  const last = messages.at(-1);
  if (last?.role === 'assistant') {
    // Pushed, not copied: a run of 20,000 calls copied each time was 200 million copies
    // (quadratic).
    const calls = last.tool_calls as Json[] | undefined;
    if (calls) calls.push(call);
    else last.tool_calls = [call];
    return;
  }
  messages.push({ role: 'assistant', content: null, tool_calls: [call] });
}

function argumentsText(args: unknown): string {
  if (typeof args === 'string') return args || '{}';
  return JSON.stringify(args ?? {});
}

/**
 * A function call's output: a string, or content parts (their text; an image is named, as a tool
 * message holds text).
 */
function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (!Array.isArray(output)) return output === undefined || output === null ? '' : JSON.stringify(output);
  return textOf(output);
}

/** The text of a message's content: a string, or its text parts joined. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Json[])
    .filter((part) => TEXT_PARTS.has(part?.type as string))
    .map((part) => stringOf(part.text) || stringOf(part.refusal))
    .join('\n');
}

function userParts(parts: Json[]): Json[] {
  const out: Json[] = [];
  for (const part of parts) {
    if (TEXT_PARTS.has(part.type as string)) out.push({ type: 'text', text: stringOf(part.text) });
    else if (part.type === 'input_image' && typeof part.image_url === 'string')
      out.push({ type: 'image_url', image_url: { url: part.image_url } });
  }
  return out;
}

/** A field that should be a string: itself, or empty. */
export function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
