import { newStreamState } from '../billing/settlement.js';
import type { UsualChunk } from '../proxy/usual-chunk.js';
import type { ChunkWriter } from './stream-writer.js';

type Json = Record<string, unknown>;

/** One choice as its chunks built it so far. */
interface ChoiceParts {
  index: number;
  role: unknown;
  /**
   * A message's content (or a completion's text), and its reasoning: each the JSON strings' insides
   * as the engine escaped them, joined, decoded once at the end (no decode a chunk).
   */
  text: string;
  reasoning: string;
  /** The delta's name for the reasoning: vLLM's `reasoning` or llama.cpp's `reasoning_content`. */
  reasoningKey: string | null;
  toolCalls: Json[];
  /** The chunks' logprobs joined; undefined when no chunk had the member. */
  logprobs: Json | null | undefined;
  finishReason: unknown;
  /** vLLM's `stop_reason`; undefined when the engine writes none (llama.cpp). */
  stopReason: unknown;
}

/**
 * A JSON call's answer, assembled from the engine's stream: the engine is always asked for a stream
 * with its usage, so a call cut at any point is billed from the engine's running count, as a stream
 * is (`state`, which `readEngineChunks` keeps). `answer()` is the JSON answer the engine would have
 * sent for the same request (chat's `chat.completion` or completions' `text_completion`), field for
 * field as far as the gateway shows it: the null members vLLM writes and the gateway drops
 * (`withoutNullFields`) are left out.
 *
 * @example
 * const assembled = new StreamedAnswer(true);
 * const read = readEngineChunks(assembled);
 * for (const data of engineEvents) read(data);
 * assembled.answer(); // { id, object: 'chat.completion', created, model, choices: [...], usage }
 */
export class StreamedAnswer implements ChunkWriter {
  readonly state = newStreamState();
  private head: Json = {};
  private chat = true;
  private usage: unknown;
  private readonly choices: ChoiceParts[] = [];

  /**
   * @param vllmShape the message has what vLLM's JSON message has and the gateway shows:
   *   `refusal: null` and `tool_calls: []` when it calls none (llama.cpp's has neither)
   */
  constructor(private readonly vllmShape: boolean) {}

  usual(chunk: UsualChunk): null {
    if (this.head.id === undefined) this.head = { id: JSON.parse(chunk.id) as unknown, created: Number(chunk.created) };
    const choice = this.choiceAt(0);
    // The usual chunk's choice has `"logprobs":null` (`readUsualChunk`).
    if (choice.logprobs === undefined) choice.logprobs = null;
    const inside = chunk.text.slice(1, -1);
    if (chunk.key === 'content') {
      choice.text += inside;
    } else {
      choice.reasoningKey = chunk.key;
      choice.reasoning += inside;
    }
    return null;
  }

  parsed(chunk: Json, choices: Json[]): null {
    if (this.head.id === undefined) {
      this.head = { id: chunk.id, created: chunk.created };
      this.chat = chunk.object !== 'text_completion';
    }
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    for (const part of choices) this.add(part);
    return null;
  }

  engineError(): null {
    return null;
  }

  /** The answer the engine's chunks so far make, in the JSON answer's shape. */
  answer(): Json {
    const answer: Json = {
      id: this.head.id,
      object: this.chat ? 'chat.completion' : 'text_completion',
      created: this.head.created,
      // The client's model name is written in by the caller.
      model: null,
    };
    answer.choices = [...this.choices]
      .sort((a, b) => a.index - b.index)
      .map((choice) => (this.chat ? this.messageChoice(choice) : completionChoice(choice)));
    if (this.usage !== undefined) answer.usage = this.usage;
    return answer;
  }

  private choiceAt(index: number): ChoiceParts {
    let choice = this.choices.find((parts) => parts.index === index);
    if (!choice) {
      choice = {
        index,
        role: undefined,
        text: '',
        reasoning: '',
        reasoningKey: null,
        toolCalls: [],
        logprobs: undefined,
        finishReason: null,
        stopReason: undefined,
      };
      this.choices.push(choice);
    }
    return choice;
  }

  private add(part: Json): void {
    const choice = this.choiceAt(typeof part.index === 'number' ? part.index : 0);
    const delta = part.delta as Json | undefined;
    if (delta) addDelta(choice, delta);
    else if (typeof part.text === 'string') {
      choice.text += escapedInside(part.text);
    }
    if (Object.hasOwn(part, 'logprobs')) choice.logprobs = joinedLogprobs(choice.logprobs, part.logprobs);
    if (part.finish_reason !== null && part.finish_reason !== undefined) choice.finishReason = part.finish_reason;
    if (Object.hasOwn(part, 'stop_reason') && (choice.stopReason === undefined || part.stop_reason !== null))
      choice.stopReason = part.stop_reason;
  }

  private messageChoice(choice: ChoiceParts): Json {
    const called = choice.toolCalls.length > 0;
    const content = decoded(choice.text);
    const message: Json = {
      role: choice.role ?? 'assistant',
      // As vLLM and llama.cpp answer: no content when the model said nothing before its calls.
      content: called && content === '' ? null : content,
    };
    if (this.vllmShape) message.refusal = null;
    if (called || this.vllmShape) message.tool_calls = choice.toolCalls.map(withoutIndex);
    if (choice.reasoningKey !== null) message[choice.reasoningKey] = decoded(choice.reasoning);
    return choiceJson(choice, 'message', message);
  }
}

/** A completions choice: its text, then what every choice has. */
function completionChoice(choice: ChoiceParts): Json {
  return choiceJson(choice, 'text', decoded(choice.text));
}

function choiceJson(choice: ChoiceParts, key: string, value: unknown): Json {
  const json: Json = { index: choice.index, [key]: value };
  if (choice.logprobs !== undefined) json.logprobs = choice.logprobs;
  json.finish_reason = choice.finishReason;
  if (choice.stopReason !== undefined) json.stop_reason = choice.stopReason;
  return json;
}

/** One chat delta added to its choice: role, content, reasoning, tool calls by their index. */
function addDelta(choice: ChoiceParts, delta: Json): void {
  if (typeof delta.role === 'string') choice.role = delta.role;
  if (typeof delta.content === 'string') {
    choice.text += escapedInside(delta.content);
  }
  for (const key of ['reasoning', 'reasoning_content'] as const) {
    if (typeof delta[key] !== 'string') continue;
    choice.reasoningKey = key;
    choice.reasoning += escapedInside(delta[key]);
  }
  if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls as Json[]) addToolCall(choice, call);
}

/**
 * A tool call's piece: the first names its id, type and function; the next add to its arguments.
 */
function addToolCall(choice: ChoiceParts, piece: Json): void {
  const index = typeof piece.index === 'number' ? piece.index : choice.toolCalls.length;
  let call = choice.toolCalls.find((known) => known.index === index);
  const fn = (piece.function ?? {}) as Json;
  if (!call) {
    call = { index, id: piece.id, type: piece.type ?? 'function', function: { name: fn.name, arguments: '' } };
    choice.toolCalls.push(call);
  }
  if (typeof piece.id === 'string') call.id = piece.id;
  const known = call.function as Json;
  if (typeof fn.name === 'string' && fn.name !== '') known.name = fn.name;
  if (typeof fn.arguments === 'string') known.arguments = `${known.arguments as string}${fn.arguments}`;
}

function withoutIndex(call: Json): Json {
  const { index: _index, ...rest } = call;
  return rest;
}

/**
 * The logprobs of one more chunk joined to those before: chat's `content` (and `refusal`) lists
 * and completions' `tokens`, `token_logprobs`, `top_logprobs` and `text_offset` lists, each
 * appended.
 */
function joinedLogprobs(before: Json | null | undefined, next: unknown): Json | null {
  if (typeof next !== 'object' || next === null) return before ?? null;
  // The lists are the joined answer's own (copied from the first chunk), appended to in place.
  const joined: Json = before ?? {};
  for (const [key, value] of Object.entries(next as Json)) {
    const earlier = joined[key];
    if (Array.isArray(earlier) && Array.isArray(value)) for (const item of value as unknown[]) earlier.push(item);
    else joined[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
  }
  return joined;
}

/** A decoded string's JSON escaping, without its quotes: what a usual chunk's text is. */
function escapedInside(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function decoded(inside: string): string {
  return inside === '' ? '' : (JSON.parse(`"${inside}"`) as string);
}
