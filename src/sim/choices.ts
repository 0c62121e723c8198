import { invalidBody } from './errors.js';
import { isObject, type JsonObject } from './fields.js';
import { cutChoice, pushToolCall, splitPieces, wordPieces, type ChoiceOutput, type Piece } from './pieces.js';
import { schemaValue } from './schema-values.js';
import { scriptedChoice, type ScriptTurn } from './script.js';
import { createRandom, hashText, joinWords, pickWords } from './tokens.js';
import type { ToolSpec } from './tools.js';

// What each of a request's `n` choices says: the script's turn, the tools
// this turn calls, JSON for a response_format, or generated words.

/** `response_format` as the answer must honour it; null for plain text. */
export type ResponseFormat = { type: 'json_object' } | { type: 'json_schema'; schema: JsonObject };

export interface ChoiceInput {
  n: number;
  /** Seeds the words and values; choice k > 0 draws from its own. */
  seed: number;
  /** Plain text: tokens to generate, reasoning included, and how it ends. */
  total: number;
  finishReason: 'stop' | 'length';
  reasoningTokens: number;
  /** Tokens a tool call or a JSON answer may take before it is cut ("length"). */
  limit: number;
  calls: ToolSpec[];
  /** A named tool_choice: vLLM's structured output, which finishes "stop". */
  named: boolean;
  format: ResponseFormat | null;
  hideReasoning: boolean;
  turn: ScriptTurn | null;
}

/**
 * Reads `response_format`: text (null), `json_object`, or `json_schema` with its schema.
 *
 * @example
 * readResponseFormat({ response_format: { type: 'json_object' } }); // { type: 'json_object' }
 */
export function readResponseFormat(body: JsonObject): ResponseFormat | null {
  const format = body.response_format;
  if (format === undefined || format === null) return null;
  if (!isObject(format)) throw invalidBody(['response_format'], 'model_type', 'Input should be a valid dictionary');
  if (format.type === 'text') return null;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    const spec = format.json_schema;
    if (!isObject(spec)) throw invalidBody(['response_format', 'json_schema'], 'missing', 'Field required');
    return { type: 'json_schema', schema: isObject(spec.schema) ? spec.schema : {} };
  }
  throw invalidBody(
    ['response_format', 'type'],
    'literal_error',
    "Input should be 'text', 'json_object' or 'json_schema'",
  );
}

/**
 * The request's choices, each fixed before generation starts.
 *
 * @example
 * const choices = buildChoices(input);
 */
export function buildChoices(input: ChoiceInput): ChoiceOutput[] {
  const choices: ChoiceOutput[] = [];
  for (let k = 0; k < input.n; k++) {
    const seed = k === 0 ? input.seed : hashText(input.seed, `choice:${k}`);
    choices.push(buildChoice(input, seed));
  }
  return choices;
}

function buildChoice(input: ChoiceInput, seed: number): ChoiceOutput {
  const { reasoningTokens, hideReasoning } = input;
  if (input.turn) return scriptedChoice(input.turn, hideReasoning);
  if (input.calls.length === 0 && input.format === null) {
    const words = pickWords(seed, input.total);
    return {
      pieces: wordPieces(words, input.total, reasoningTokens),
      finishReason: input.finishReason,
      completionTokens: input.total,
      reasoningTokens,
      hideReasoning,
    };
  }
  const words = pickWords(seed, reasoningTokens + 6);
  const pieces: Piece[] = wordPieces(words, reasoningTokens, reasoningTokens);
  const next = createRandom(seed);
  let finishReason: ChoiceOutput['finishReason'] = 'stop';
  if (input.calls.length > 0) {
    input.calls.forEach((tool, i) =>
      pushToolCall(pieces, i, tool.name, JSON.stringify(schemaValue(tool.parameters, next))),
    );
    if (!input.named) finishReason = 'tool_calls';
  } else {
    const value =
      input.format?.type === 'json_schema'
        ? schemaValue(input.format.schema, next)
        : { answer: joinWords(words, reasoningTokens, reasoningTokens + 6) };
    for (const text of splitPieces(JSON.stringify(value))) pieces.push({ kind: 'content', text });
  }
  const choice: ChoiceOutput = {
    pieces,
    finishReason,
    completionTokens: pieces.length,
    reasoningTokens,
    hideReasoning,
  };
  return cutChoice(choice, input.limit);
}
