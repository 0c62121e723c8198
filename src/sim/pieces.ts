import { randomUUID } from 'node:crypto';
import { tokenText } from './tokens.js';

// One choice's output as the tokens it is generated in: each piece is one
// token of reasoning, of content, or of a tool call (its name, then its
// arguments' fragments). The stream writes a piece a chunk; the JSON answer
// joins them; a max_tokens cut is a shorter list of pieces.

/** One generated token. `call` is the tool call's index within the choice. */
export type Piece =
  | { kind: 'reasoning' | 'content'; text: string }
  | { kind: 'call'; call: number; id: string; name: string }
  | { kind: 'args'; call: number; text: string };

/**
 * What a choice finished with; `tool_calls` is vLLM's substitution when the tool parser found
 * calls.
 */
export type FinishReason = 'stop' | 'length' | 'tool_calls';

/** One choice, ready to stream or to join. */
export interface ChoiceOutput {
  pieces: Piece[];
  finishReason: FinishReason;
  /** Tokens the usage reports for this choice (the pieces, unless a script says otherwise). */
  completionTokens: number;
  reasoningTokens: number;
  /** Reasoning pieces are generated and counted but not shown (`include_reasoning: false`). */
  hideReasoning: boolean;
}

/** A tool call as the JSON answer shows it. */
export interface ToolCallJson {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

// A token and the spaces before it, or trailing spaces: the pieces join back to the text exactly.
const PIECE_PATTERN = /\s*(?:\w+|[^\s\w])|\s+/g;

/**
 * Splits text into token-sized pieces that join back to it exactly.
 *
 * @example
 * splitPieces('Hi, you'); // ['Hi', ',', ' you']
 */
export function splitPieces(text: string): string[] {
  return text.match(PIECE_PATTERN) ?? [];
}

/**
 * A tool call id as vLLM makes them (`chatcmpl-tool-` and 32 hex digits).
 *
 * @example
 * toolCallId(); // 'chatcmpl-tool-3f2c…'
 */
export function toolCallId(): string {
  return `chatcmpl-tool-${randomUUID().replaceAll('-', '')}`;
}

/**
 * Pieces of generated words: the first `reasoning` are reasoning, the rest content.
 *
 * @example
 * wordPieces(pickWords(1, 8), 8, 2);
 */
export function wordPieces(words: Uint8Array, count: number, reasoning: number): Piece[] {
  const pieces: Piece[] = new Array<Piece>(count);
  for (let i = 0; i < count; i++) {
    const kind = i < reasoning ? 'reasoning' : 'content';
    pieces[i] = { kind, text: tokenText(words[i] ?? 0, i === 0 || i === reasoning) };
  }
  return pieces;
}

/**
 * Appends a tool call's pieces: its name, then its arguments a token at a time.
 *
 * @example
 * pushToolCall(pieces, 0, 'get_weather', '{"city":"Paris"}');
 */
export function pushToolCall(pieces: Piece[], call: number, name: string, args: string, id = toolCallId()): void {
  pieces.push({ kind: 'call', call, id, name });
  for (const text of splitPieces(args)) pieces.push({ kind: 'args', call, text });
}

/**
 * The inside of a stream chunk's `delta` for one piece; '' for a piece that shows nothing.
 *
 * @example
 * deltaOf({ kind: 'content', text: ' the' }, false); // '"content":" the"'
 */
export function deltaOf(piece: Piece, hideReasoning: boolean): string {
  switch (piece.kind) {
    case 'content':
      return `"content":${JSON.stringify(piece.text)}`;
    case 'reasoning':
      return hideReasoning ? '' : `"reasoning":${JSON.stringify(piece.text)}`;
    case 'call':
      return `"tool_calls":[{"index":${piece.call},"id":"${piece.id}","type":"function","function":{"name":${JSON.stringify(piece.name)},"arguments":""}}]`;
    case 'args':
      return `"tool_calls":[{"index":${piece.call},"function":{"arguments":${JSON.stringify(piece.text)}}}]`;
  }
}

/** A choice's message parts, joined from its pieces. */
export interface JoinedChoice {
  content: string;
  reasoning: string;
  toolCalls: ToolCallJson[];
}

/**
 * Joins a choice's pieces into its text, reasoning and tool calls.
 *
 * @example
 * const { content, toolCalls } = joinPieces(choice.pieces);
 */
export function joinPieces(pieces: readonly Piece[]): JoinedChoice {
  let content = '';
  let reasoning = '';
  const toolCalls: ToolCallJson[] = [];
  for (const piece of pieces) {
    if (piece.kind === 'content') content += piece.text;
    else if (piece.kind === 'reasoning') reasoning += piece.text;
    else if (piece.kind === 'call')
      toolCalls[piece.call] = { id: piece.id, type: 'function', function: { name: piece.name, arguments: '' } };
    else if (piece.kind === 'args') {
      const call = toolCalls[piece.call];
      if (call) call.function.arguments += piece.text;
    }
  }
  return { content, reasoning, toolCalls };
}

/**
 * Cuts a choice to `limit` tokens: what max_tokens does to a longer answer.
 *
 * @example
 * const cut = cutChoice(choice, 10);
 */
export function cutChoice(choice: ChoiceOutput, limit: number): ChoiceOutput {
  if (choice.pieces.length <= limit) return choice;
  const pieces = choice.pieces.slice(0, limit);
  let reasoningTokens = 0;
  for (const piece of pieces) if (piece.kind === 'reasoning') reasoningTokens++;
  return { ...choice, pieces, finishReason: 'length', completionTokens: limit, reasoningTokens };
}
