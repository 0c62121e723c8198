import { MAX_CHOICES, plannedLength, readChoiceCount, readStream, type StreamSettings } from './chat.js';
import { badRequest, invalidBody } from './errors.js';
import { optionalBoolean, optionalInt, readCacheSalt, readPriority, type JsonObject } from './fields.js';
import { findModel, type ResolvedModel, type SimState } from './state.js';
import { countTokens, hashText, HASH_START, pickWords, splitTokens, tokenText } from './tokens.js';

// vLLM's legacy `/v1/completions`: one choice per prompt and `n`, `echo`,
// `logprobs` (an int, the top alternatives per token), `stop`, streaming
// with usage. vLLM refuses `suffix` ("suffix is not currently supported"),
// and its V1 engine `best_of` above 1; so does the simulator.

/** vLLM's default `--max-logprobs`: a request asking for more is a 400. */
export const MAX_LOGPROBS = 20;

/** One completion choice, its text already cut at a stop string. */
export interface CompletionChoice {
  /** The prompt's text when `echo` is set, else ''. */
  echoed: string;
  /** The generated pieces, a token each. */
  pieces: string[];
  finishReason: 'stop' | 'length';
  /** The stop string that ended it, vLLM's `stop_reason`. */
  stopReason: string | null;
  /** Tokens generated (the stop string's included, as vLLM counts them). */
  tokens: number;
  /** Word indexes, for the logprobs' alternatives. */
  words: Uint8Array;
  /** The prompt's tokens, for echoed logprobs. */
  promptPieces: string[];
}

export interface CompletionPlan extends StreamSettings {
  model: ResolvedModel;
  promptTokens: number;
  choices: CompletionChoice[];
  /** Top alternatives per token; null: no logprobs. */
  logprobs: number | null;
}

interface Prompt {
  text: string;
  tokens: number;
  hash: number;
}

/**
 * Validates a completions request as vLLM does and fixes its output.
 *
 * @example
 * const plan = planCompletion(state, { model: 'sim-chat', prompt: 'Once upon', max_tokens: 5 });
 */
export function planCompletion(state: SimState, body: JsonObject): CompletionPlan {
  const prompts = readPrompts(body.prompt);
  if (body.suffix !== undefined && body.suffix !== null)
    throw badRequest('suffix is not currently supported', 'suffix');
  const bestOf = optionalInt(body, 'best_of');
  if (bestOf !== null && bestOf > 1)
    throw badRequest('best_of > 1 is not supported by the V1 engine; ask for n choices instead.', 'best_of');
  const logprobs = optionalInt(body, 'logprobs');
  if (logprobs !== null && (logprobs < 0 || logprobs > MAX_LOGPROBS)) {
    throw badRequest(
      `Requested sample logprobs of ${logprobs}, which is greater than max allowed: ${MAX_LOGPROBS}`,
      'logprobs',
    );
  }
  const echo = optionalBoolean(body, 'echo') ?? false;
  const stops = readStops(body.stop);
  const streaming = readStream(body);
  const n = readChoiceCount(body);
  if (prompts.length * n > MAX_CHOICES) {
    throw badRequest(
      `${prompts.length} prompts with n ${n} make ${prompts.length * n} choices; at most ${MAX_CHOICES} (the simulator's bound on choices).`,
      'prompt',
    );
  }
  const model = findModel(state, body.model, 'chat');
  // Checked as vLLM checks them; completions run unscheduled here, so neither changes the answer.
  readCacheSalt(body);
  readPriority(body, state.schedulingPolicy);
  const seed = optionalInt(body, 'seed');
  const choices: CompletionChoice[] = [];
  let promptTokens = 0;
  for (const prompt of prompts) {
    const length = plannedLength(state, model, body, prompt.tokens);
    promptTokens += prompt.tokens;
    const base = seed === null ? prompt.hash : hashText(prompt.hash, `seed:${seed}`);
    for (let k = 0; k < n; k++) {
      const words = pickWords(k === 0 ? base : hashText(base, `choice:${k}`), length.total);
      choices.push(
        completionChoice(
          words,
          length.total,
          length.finishReason,
          stops,
          echo ? prompt.text : '',
          logprobs !== null && echo,
        ),
      );
    }
  }
  return { ...streaming, model, promptTokens, choices, logprobs };
}

function readPrompts(prompt: unknown): Prompt[] {
  if (prompt === undefined || prompt === null) throw invalidBody(['prompt'], 'missing', 'Field required');
  const one = (value: unknown, loc: Array<string | number>): Prompt => {
    if (typeof value === 'string')
      return { text: value, tokens: countTokens(value), hash: hashText(HASH_START, value) };
    // Token ids: counted, not shown (echo has no text for them).
    if (Array.isArray(value) && value.every((id) => Number.isInteger(id)))
      return { text: '', tokens: value.length, hash: hashText(HASH_START, value.join(',')) };
    throw invalidBody(loc, 'string_type', 'Input should be a valid string');
  };
  if (typeof prompt === 'string') return [one(prompt, ['prompt'])];
  if (!Array.isArray(prompt) || prompt.length === 0) throw badRequest('Prompt cannot be empty.', 'prompt');
  if (prompt.every((id) => Number.isInteger(id))) return [one(prompt, ['prompt'])];
  return prompt.map((value, i) => one(value, ['prompt', i]));
}

function readStops(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  if (typeof stop === 'string') return stop === '' ? [] : [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) return stop.filter((s) => s !== '');
  throw invalidBody(['stop'], 'string_type', 'Input should be a valid string');
}

function completionChoice(
  words: Uint8Array,
  total: number,
  finishReason: 'stop' | 'length',
  stops: string[],
  echoed: string,
  echoLogprobs: boolean,
): CompletionChoice {
  const pieces: string[] = [];
  let text = '';
  for (let i = 0; i < total; i++) {
    const piece = tokenText(words[i] ?? 0, i === 0 && echoed === '');
    const before = text.length;
    text += piece;
    // A stop string ends the text where it starts, and is not part of it (vLLM's
    // include_stop_str_in_output false).
    for (const stop of stops) {
      const at = text.indexOf(stop, Math.max(0, before - stop.length + 1));
      if (at >= 0) {
        const kept = text.slice(before, Math.max(before, at));
        if (kept !== '' || pieces.length === 0) pieces.push(kept);
        return {
          echoed,
          pieces,
          finishReason: 'stop',
          stopReason: stop,
          tokens: i + 1,
          words,
          promptPieces: echoLogprobs ? splitTokens(echoed) : [],
        };
      }
    }
    pieces.push(piece);
  }
  return {
    echoed,
    pieces,
    finishReason,
    stopReason: null,
    tokens: total,
    words,
    promptPieces: echoLogprobs ? splitTokens(echoed) : [],
  };
}

/** vLLM's logprobs object for a completion choice. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/**
 * A plausible logprobs structure: the chosen token's log probability and
 * `top` alternatives per token, each lower; echoed prompt tokens first, the
 * very first without a log probability, as vLLM reports them.
 *
 * @example
 * completionLogprobs(choice, 2, 0, 4);
 */
export function completionLogprobs(
  choice: CompletionChoice,
  top: number,
  from: number,
  to: number,
  offset: number,
): CompletionLogprobs {
  const out: CompletionLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  const push = (token: string, at: number, logprob: number | null, seed: number): void => {
    out.tokens.push(token);
    out.token_logprobs.push(logprob);
    out.text_offset.push(at);
    if (logprob === null) {
      out.top_logprobs.push(null);
      return;
    }
    const alternatives: Record<string, number> = { [token]: logprob };
    for (let j = 1; Object.keys(alternatives).length <= top && j < 64; j++) {
      const alternative = tokenText((seed + j * 7) % 64, false);
      if (!(alternative in alternatives)) alternatives[alternative] = round(logprob - j * 0.75);
    }
    out.top_logprobs.push(alternatives);
  };
  if (from === 0) {
    let at = 0;
    choice.promptPieces.forEach((token, i) => {
      at = choice.echoed.indexOf(token, at);
      push(token, at, i === 0 ? null : logprobOf(hashText(HASH_START, token)), i);
      at += token.length;
    });
  }
  let at = offset;
  for (let i = from; i < to; i++) {
    const token = choice.pieces[i] as string;
    push(token, at, logprobOf((hashText(HASH_START, token) ^ i) >>> 0), choice.words[i] ?? 0);
    at += token.length;
  }
  return out;
}

function logprobOf(hash: number): number {
  return round(-((hash % 2500) / 1000));
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
