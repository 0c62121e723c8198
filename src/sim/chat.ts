import { badRequest, invalidBody } from './errors.js';
import { buildChoices, readResponseFormat } from './choices.js';
import { isObject, optionalBoolean, optionalInt, readCacheSalt, readPriority, type JsonObject } from './fields.js';
import { promptBlockHashes } from './kv-cache.js';
import type { ChoiceOutput } from './pieces.js';
import { measureMessages, promptTokenStrings } from './prompt.js';
import { scriptTurn } from './script.js';
import { findModel, type ResolvedModel, type SimState } from './state.js';
import { countTokens, hashText } from './tokens.js';
import { callsFor, readTools } from './tools.js';

/** Reasoning models think for at most this many tokens before answering. */
const MAX_REASONING_TOKENS = 4;

/**
 * Choices one request may ask for (`n`): the simulator's own bound, so one request cannot fill its
 * memory.
 */
export const MAX_CHOICES = 128;

/** A validated chat request, ready to generate. */
export interface ChatPlan {
  model: ResolvedModel;
  promptTokens: number;
  /** The `n` choices, generated side by side. */
  choices: ChoiceOutput[];
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
  /**
   * A loaded model's prompt block hashes (its prefix cache's keys, salted by `cache_salt`); empty
   * otherwise.
   */
  blockHashes: string[];
  /** The request's `priority` (0 unless the engine schedules by priority): lower is served first. */
  priority: number;
}

export interface StreamSettings {
  stream: boolean;
  includeUsage: boolean;
  continuousUsage: boolean;
}

/**
 * Validates a chat request the way vLLM does (pydantic 400s, 404 model,
 * context-length 400s) and fixes its deterministic output.
 *
 * @example
 * const plan = planChat(state, { model: 'sim-chat', messages: [{ role: 'user', content: 'Hi' }] });
 */
export function planChat(state: SimState, body: JsonObject): ChatPlan {
  const messages = body.messages;
  if (messages === undefined) throw invalidBody(['messages'], 'missing', 'Field required');
  if (!Array.isArray(messages)) throw invalidBody(['messages'], 'list_type', 'Input should be a valid list');
  const streaming = readStream(body);
  const seed = optionalInt(body, 'seed');
  const n = readChoiceCount(body);
  const model = findModel(state, body.model, 'chat');
  const tools = readTools(body, model.toolParser);
  const format = readResponseFormat(body);
  const hideReasoning = optionalBoolean(body, 'include_reasoning') === false;
  const cacheSalt = readCacheSalt(body);
  const priority = readPriority(body, state.schedulingPolicy);
  const prompt = measureMessages(messages);
  // The chat template renders the tool definitions into the prompt.
  const promptTokens = prompt.tokens + (Array.isArray(body.tools) ? countTokens(JSON.stringify(body.tools)) : 0);
  const length = plannedLength(state, model, body, promptTokens);

  const scheduler = state.metrics.schedulers.get(model.name);
  const blockHashes = scheduler
    ? promptBlockHashes(promptTokenStrings(messages), scheduler.settings.blockSize, cacheSalt)
    : [];
  if (
    scheduler &&
    Math.ceil((promptTokens + length.total) / scheduler.settings.blockSize) > scheduler.settings.numGpuBlocks
  ) {
    throw badRequest(
      `The request needs more KV cache blocks than the engine has (${scheduler.settings.numGpuBlocks} blocks of ${scheduler.settings.blockSize} tokens).`,
      'input_tokens',
    );
  }
  const wordSeed = seed === null ? prompt.hash : hashText(prompt.hash, `seed:${seed}`);
  const turn = model.script ? scriptTurn(model.script, messages) : null;
  const choices = buildChoices({
    n,
    seed: wordSeed,
    total: length.total,
    finishReason: length.finishReason,
    reasoningTokens: model.reasoning ? Math.min(MAX_REASONING_TOKENS, Math.floor(length.total / 2)) : 0,
    limit: length.limit,
    calls: turn ? [] : callsFor(tools, messages, prompt.hash),
    named: typeof tools.mode === 'object',
    format,
    hideReasoning,
    turn,
  });
  return { model, promptTokens: turn?.prompt_tokens ?? promptTokens, choices, ...streaming, blockHashes, priority };
}

/**
 * `stream` and `stream_options`. vLLM's StreamOptions: include_usage defaults to true, so `{}` asks
 * for usage.
 *
 * @example
 * readStream({ stream: true, stream_options: {} }); // { stream: true, includeUsage: true, continuousUsage: false }
 */
export function readStream(body: JsonObject): StreamSettings {
  const stream = optionalBoolean(body, 'stream') ?? false;
  const streamOptions = body.stream_options;
  let includeUsage = false;
  let continuousUsage = false;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isObject(streamOptions))
      throw invalidBody(['stream_options'], 'model_type', 'Input should be a valid dictionary');
    if (!stream) throw badRequest('Stream options can only be defined when `stream=True`.', 'stream_options');
    includeUsage = optionalBoolean(streamOptions, 'include_usage', ['stream_options', 'include_usage']) ?? true;
    const continuous =
      optionalBoolean(streamOptions, 'continuous_usage_stats', ['stream_options', 'continuous_usage_stats']) ?? false;
    continuousUsage = includeUsage && continuous;
  }
  return { stream, includeUsage, continuousUsage };
}

/**
 * `n`, within 1..MAX_CHOICES.
 *
 * @example
 * readChoiceCount({ n: 8 }); // 8
 */
export function readChoiceCount(body: JsonObject): number {
  const n = optionalInt(body, 'n') ?? 1;
  if (n < 1) throw badRequest(`n must be at least 1, got ${n}.`, 'n');
  if (n > MAX_CHOICES)
    throw badRequest(`n must be at most ${MAX_CHOICES} (the simulator's bound on choices), got ${n}.`, 'n');
  return n;
}

/** How long a plain answer is, how it ends, and where a tool call or JSON answer is cut. */
export interface PlannedLength {
  total: number;
  finishReason: 'stop' | 'length';
  limit: number;
}

/**
 * The context-length 400s, then the answer's length: the text "naturally"
 * ends after defaultMaxTokens; a smaller limit, the context window, or
 * ignore_eos cuts or stretches it and says "length".
 *
 * @example
 * plannedLength(state, model, { max_tokens: 5 }, 12); // { total: 5, finishReason: 'length', limit: 5 }
 */
export function plannedLength(
  state: SimState,
  model: ResolvedModel,
  body: JsonObject,
  promptTokens: number,
): PlannedLength {
  const maxTokens = optionalInt(body, 'max_tokens');
  const maxCompletionTokens = optionalInt(body, 'max_completion_tokens');
  const ignoreEos = optionalBoolean(body, 'ignore_eos') ?? false;
  const requested = maxCompletionTokens ?? maxTokens;
  if (requested !== null && requested < 1)
    throw badRequest(`max_tokens must be at least 1, got ${requested}.`, 'max_tokens');
  const maxLen = model.maxModelLen;
  if (promptTokens >= maxLen) {
    throw badRequest(
      `This model's maximum context length is ${maxLen} tokens. However, your request has ${promptTokens} input tokens. Please reduce the length of the input messages.`,
      'input_tokens',
    );
  }
  if (requested !== null && promptTokens + requested > maxLen) {
    throw badRequest(
      `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${maxLen} tokens and your request has ${promptTokens} input tokens (${requested} > ${maxLen} - ${promptTokens}).`,
      'max_tokens',
    );
  }
  const natural = state.defaultMaxTokens;
  const room = maxLen - promptTokens;
  const limit = requested ?? room;
  if (requested !== null && (requested < natural || ignoreEos))
    return { total: requested, finishReason: 'length', limit };
  if (natural > room) return { total: room, finishReason: 'length', limit };
  return { total: natural, finishReason: 'stop', limit };
}
