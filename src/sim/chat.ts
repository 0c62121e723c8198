import { badRequest, invalidBody } from './errors.js';
import { isObject, optionalBoolean, optionalInt, type JsonObject } from './fields.js';
import { promptBlockHashes } from './kv-cache.js';
import { wordPieces, type ChoiceOutput } from './pieces.js';
import { measureMessages, promptTokenStrings } from './prompt.js';
import { findModel, type ResolvedModel, type SimState } from './state.js';
import { hashText, pickWords } from './tokens.js';

export { runChat } from './chat-answer.js';

/** Reasoning models think for at most this many tokens before answering. */
const MAX_REASONING_TOKENS = 4;

/** Choices one request may ask for (`n`): the simulator's own bound, so one request cannot fill its memory. */
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
  /** A loaded model's prompt block hashes (its prefix cache's keys); empty otherwise. */
  blockHashes: string[];
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
  const stream = optionalBoolean(body, 'stream') ?? false;
  const maxTokens = optionalInt(body, 'max_tokens');
  const maxCompletionTokens = optionalInt(body, 'max_completion_tokens');
  const seed = optionalInt(body, 'seed');
  const ignoreEos = optionalBoolean(body, 'ignore_eos') ?? false;
  const n = optionalInt(body, 'n') ?? 1;
  if (n < 1) throw badRequest(`n must be at least 1, got ${n}.`, 'n');
  if (n > MAX_CHOICES) throw badRequest(`n must be at most ${MAX_CHOICES} (the simulator's bound on choices), got ${n}.`, 'n');

  // vLLM's StreamOptions: include_usage defaults to true, so `{}` asks for usage.
  const streamOptions = body.stream_options;
  let includeUsage = false;
  let continuousUsage = false;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isObject(streamOptions)) throw invalidBody(['stream_options'], 'model_type', 'Input should be a valid dictionary');
    if (!stream) throw badRequest('Stream options can only be defined when `stream=True`.', 'stream_options');
    includeUsage = optionalBoolean(streamOptions, 'include_usage', ['stream_options', 'include_usage']) ?? true;
    const continuous = optionalBoolean(streamOptions, 'continuous_usage_stats', ['stream_options', 'continuous_usage_stats']) ?? false;
    continuousUsage = includeUsage && continuous;
  }

  const model = findModel(state, body.model, 'chat');
  const requested = maxCompletionTokens ?? maxTokens;
  if (requested !== null && requested < 1) throw badRequest(`max_tokens must be at least 1, got ${requested}.`, 'max_tokens');

  const prompt = measureMessages(messages);
  const maxLen = model.maxModelLen;
  if (prompt.tokens >= maxLen) {
    throw badRequest(
      `This model's maximum context length is ${maxLen} tokens. However, your request has ${prompt.tokens} input tokens. Please reduce the length of the input messages.`,
      'input_tokens',
    );
  }
  if (requested !== null && prompt.tokens + requested > maxLen) {
    throw badRequest(
      `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${maxLen} tokens and your request has ${prompt.tokens} input tokens (${requested} > ${maxLen} - ${prompt.tokens}).`,
      'max_tokens',
    );
  }

  // The text "naturally" ends after defaultMaxTokens; a smaller limit, the
  // context window, or ignore_eos cuts or stretches it and says "length".
  const natural = state.defaultMaxTokens;
  const room = maxLen - prompt.tokens;
  let total = natural;
  let finishReason: 'stop' | 'length' = 'stop';
  if (requested !== null && (requested < natural || ignoreEos)) {
    total = requested;
    finishReason = 'length';
  } else if (natural > room) {
    total = room;
    finishReason = 'length';
  }

  const scheduler = state.metrics.schedulers.get(model.name);
  const blockHashes = scheduler ? promptBlockHashes(promptTokenStrings(messages), scheduler.settings.blockSize) : [];
  if (scheduler && Math.ceil((prompt.tokens + total) / scheduler.settings.blockSize) > scheduler.settings.numGpuBlocks) {
    throw badRequest(`The request needs more KV cache blocks than the engine has (${scheduler.settings.numGpuBlocks} blocks of ${scheduler.settings.blockSize} tokens).`, 'input_tokens');
  }
  const wordSeed = seed === null ? prompt.hash : hashText(prompt.hash, `seed:${seed}`);
  const reasoningTokens = model.reasoning ? Math.min(MAX_REASONING_TOKENS, Math.floor(total / 2)) : 0;
  const choices: ChoiceOutput[] = [];
  for (let k = 0; k < n; k++) {
    // Choice 0 keeps the seed of a single answer; the others draw their own words.
    const words = pickWords(k === 0 ? wordSeed : hashText(wordSeed, `choice:${k}`), total);
    choices.push({ pieces: wordPieces(words, total, reasoningTokens), finishReason, completionTokens: total, reasoningTokens, hideReasoning: false });
  }
  return {
    model,
    promptTokens: prompt.tokens,
    choices,
    stream,
    includeUsage,
    continuousUsage,
    blockHashes,
  };
}
