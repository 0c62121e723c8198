import { readFileSync } from 'node:fs';
import { SimHttpError, badRequest } from './errors.js';
import { isObject } from './fields.js';
import { pushToolCall, splitPieces, type ChoiceOutput, type FinishReason, type Piece } from './pieces.js';

// Scripted mode: a file of turns says exactly what a model answers. A
// request's turn is the number of assistant messages it carries (the first
// request is turn 0, the request after one answer turn 1, ...), so a test
// drives an exact conversation, tool calls and errors included.

/** One scripted answer. */
export interface ScriptTurn {
  content?: string;
  reasoning?: string;
  /**
   * `arguments` is an object (sent as its JSON) or a string sent as is (a cut one, with
   * finish_reason "length").
   */
  tool_calls?: Array<{ name: string; arguments: unknown; id?: string }>;
  /** Default: "tool_calls" when the turn calls tools, "stop" otherwise. */
  finish_reason?: FinishReason;
  /** What usage reports, when the pieces' count is not wanted. */
  prompt_tokens?: number;
  completion_tokens?: number;
  /** Answer this turn with an error instead: `{ "status": 429, "message": "..." }`. */
  error?: { status: number; message?: string };
}

const FINISH_REASONS: ReadonlySet<string> = new Set(['stop', 'length', 'tool_calls']);
const ERROR_TYPES: Record<number, string> = {
  400: 'BadRequestError',
  404: 'NotFoundError',
  429: 'TooManyRequestsError',
  503: 'ServiceUnavailableError',
};

/**
 * Reads a script: a JSON array of turns, `{"turns": [...]}`, or JSON Lines (a turn a line).
 * Throws a message naming the file and the turn on anything it cannot use.
 *
 * @example
 * const turns = loadScript('test/fixtures/agent.jsonl');
 */
export function loadScript(path: string): ScriptTurn[] {
  return parseScript(readFileSync(path, 'utf8'), path);
}

/**
 * Parses a script's text (see loadScript).
 *
 * @example
 * parseScript('{"content":"Hello"}\n{"content":"Bye"}', 'inline');
 */
export function parseScript(text: string, source: string): ScriptTurn[] {
  let values: unknown[];
  try {
    const whole: unknown = JSON.parse(text);
    values = Array.isArray(whole) ? whole : isObject(whole) && Array.isArray(whole.turns) ? whole.turns : [whole];
  } catch {
    const lines = text.split('\n').filter((line) => line.trim() !== '');
    values = lines.map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        throw new TypeError(`script ${source}: line ${i + 1} is not JSON`);
      }
    });
  }
  if (values.length === 0) throw new TypeError(`script ${source}: no turns`);
  return values.map((value, i) => checkTurn(value, `script ${source}: turn ${i}`));
}

function checkTurn(value: unknown, where: string): ScriptTurn {
  if (!isObject(value)) throw new TypeError(`${where} is not an object`);
  const optionalString = (key: string): void => {
    if (value[key] !== undefined && typeof value[key] !== 'string')
      throw new TypeError(`${where}: ${key} must be a string`);
  };
  optionalString('content');
  optionalString('reasoning');
  if (value.finish_reason !== undefined && !FINISH_REASONS.has(value.finish_reason as string))
    throw new TypeError(`${where}: finish_reason must be stop, length or tool_calls`);
  for (const key of ['prompt_tokens', 'completion_tokens']) {
    const count = value[key];
    if (count !== undefined && !(Number.isInteger(count) && (count as number) >= 0))
      throw new TypeError(`${where}: ${key} must be an integer >= 0`);
  }
  const calls = value.tool_calls;
  if (
    calls !== undefined &&
    !(
      Array.isArray(calls) &&
      calls.every((c) => isObject(c) && typeof c.name === 'string' && (c.id === undefined || typeof c.id === 'string'))
    )
  ) {
    throw new TypeError(`${where}: tool_calls must be a list of {name, arguments, id?}`);
  }
  const error = value.error;
  if (
    error !== undefined &&
    !(
      isObject(error) &&
      Number.isInteger(error.status) &&
      (error.status as number) >= 400 &&
      (error.status as number) <= 599
    )
  ) {
    throw new TypeError(`${where}: error must be {status: 400..599, message?}`);
  }
  return value;
}

/**
 * The turn a request is at: its number of assistant messages. Past the
 * script's end, a 400 saying so (a test that sends more turns than it wrote).
 *
 * @example
 * const turn = scriptTurn(script, body.messages);
 */
export function scriptTurn(script: readonly ScriptTurn[], messages: readonly unknown[]): ScriptTurn {
  let index = 0;
  for (const message of messages) if (isObject(message) && message.role === 'assistant') index++;
  const turn = script[index];
  if (!turn)
    throw badRequest(
      `The simulator's script has ${script.length} turns; this request is turn ${index + 1} (it carries ${index} assistant messages).`,
      'messages',
    );
  if (turn.error) {
    const { status, message } = turn.error;
    throw new SimHttpError(
      status,
      ERROR_TYPES[status] ?? 'InternalServerError',
      message ?? `Scripted error (turn ${index}).`,
    );
  }
  return turn;
}

/**
 * A scripted turn as a choice: its reasoning, its text, then its tool calls.
 *
 * @example
 * const choice = scriptedChoice({ content: 'Hello' }, true);
 */
export function scriptedChoice(turn: ScriptTurn, hideReasoning: boolean): ChoiceOutput {
  const pieces: Piece[] = [];
  for (const text of splitPieces(turn.reasoning ?? '')) pieces.push({ kind: 'reasoning', text });
  const reasoningTokens = pieces.length;
  for (const text of splitPieces(turn.content ?? '')) pieces.push({ kind: 'content', text });
  const calls = turn.tool_calls ?? [];
  calls.forEach((call, i) => {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {});
    pushToolCall(pieces, i, call.name, args, call.id);
  });
  // An empty answer is still one token (the end of sequence), as an engine's is.
  if (pieces.length === 0) pieces.push({ kind: 'content', text: '' });
  return {
    pieces,
    finishReason: turn.finish_reason ?? (calls.length > 0 ? 'tool_calls' : 'stop'),
    completionTokens: turn.completion_tokens ?? pieces.length,
    reasoningTokens,
    hideReasoning,
  };
}

/** A script's prompt_tokens override for this turn, if it gives one. */
export function scriptedPromptTokens(turn: ScriptTurn | null): number | null {
  return turn?.prompt_tokens ?? null;
}
