import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { badRequest, errorJson, internalError, invalidBody } from './errors.js';
import { FAULT_TOKENS, MIDSTREAM_MESSAGE, type StreamFault } from './faults.js';
import { isObject, optionalBoolean, optionalInt, type JsonObject } from './fields.js';
import { sendError, sendJson } from './http.js';
import { Job } from './job.js';
import { promptBlockHashes } from './kv-cache.js';
import { measureMessages, promptTokenStrings } from './prompt.js';
import { findModel, type ResolvedModel, type SimState } from './state.js';
import { hashText, joinWords, pickWords, tokenText } from './tokens.js';

/** Reasoning models think for at most this many tokens before answering. */
const MAX_REASONING_TOKENS = 4;

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
} as const;

/** A validated chat request, ready to generate. */
export interface ChatPlan {
  model: ResolvedModel;
  promptTokens: number;
  /** Tokens to generate, reasoning included. */
  total: number;
  /** The first `reasoningTokens` tokens are reasoning, the rest content. */
  reasoningTokens: number;
  finishReason: 'stop' | 'length';
  /** Word indexes, at least FAULT_TOKENS long so stream faults always have text. */
  words: Uint8Array;
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
  let finishReason: ChatPlan['finishReason'] = 'stop';
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
  return {
    model,
    promptTokens: prompt.tokens,
    total,
    reasoningTokens: model.reasoning ? Math.min(MAX_REASONING_TOKENS, Math.floor(total / 2)) : 0,
    finishReason,
    words: pickWords(wordSeed, Math.max(total, FAULT_TOKENS)),
    stream,
    includeUsage,
    continuousUsage,
    blockHashes,
  };
}

/**
 * Generates and sends the answer: SSE chunks as they are produced, or one
 * JSON body at the end. A stream fault cuts it after FAULT_TOKENS tokens.
 *
 * @example
 * await runChat(state, planChat(state, body), res, null);
 */
export async function runChat(state: SimState, plan: ChatPlan, res: ServerResponse, fault: StreamFault | null): Promise<void> {
  const job = new Job(state, plan.model.name, res, plan.promptTokens, plan.blockHashes);
  const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  if (plan.stream) await streamChat(state, job, plan, res, fault, id, created);
  else await completeChat(job, plan, res, fault, id, created);
}

async function streamChat(state: SimState, job: Job, plan: ChatPlan, res: ServerResponse, fault: StreamFault | null, id: string, created: number): Promise<void> {
  // Everything before "choices" is the same on every chunk: build it once.
  const head = `data: {"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(plan.model.name)},"choices":[`;
  const prompt = plan.promptTokens;
  const usage = (completion: number, extra = ''): string => `"usage":{"prompt_tokens":${prompt},"total_tokens":${prompt + completion},"completion_tokens":${completion}${extra}}`;
  const count = fault ? FAULT_TOKENS : plan.total;
  const last = fault ? -1 : plan.total - 1;
  const { reasoningTokens, words, continuousUsage } = plan;

  res.writeHead(200, SSE_HEADERS);
  // Like Starlette, headers go out at once; the body waits for the first token.
  if (state.ttftMs > 0) res.flushHeaders();

  const produced = await job.produce(count, (i) => {
    if (i === 0) {
      res.write(`${head}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]${continuousUsage ? `,${usage(0)}` : ''}}\n\n`);
    }
    const key = i < reasoningTokens ? 'reasoning' : 'content';
    const text = tokenText(words[i] ?? 0, i === 0 || i === reasoningTokens);
    const finish = i === last ? `"${plan.finishReason}","stop_reason":null` : 'null';
    return res.write(`${head}{"index":0,"delta":{"${key}":"${text}"},"logprobs":null,"finish_reason":${finish}}]${continuousUsage ? `,${usage(i + 1)}` : ''}}\n\n`);
  });
  if (!produced) return;

  if (fault === 'midstream') {
    job.fail();
    res.write(`data: ${errorJson(500, 'InternalServerError', MIDSTREAM_MESSAGE)}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  if (fault === 'drop') {
    job.fail();
    dropConnection(res);
    return;
  }
  job.finish(plan.finishReason);
  if (plan.includeUsage) res.write(`${head}],${usage(plan.total, reasoningDetails(plan))}}\n\n`);
  res.end('data: [DONE]\n\n');
}

async function completeChat(job: Job, plan: ChatPlan, res: ServerResponse, fault: StreamFault | null, id: string, created: number): Promise<void> {
  const produced = await job.produce(fault ? FAULT_TOKENS : plan.total, () => true);
  if (!produced) return;
  if (fault === 'midstream') {
    job.fail();
    sendError(res, internalError(MIDSTREAM_MESSAGE));
    return;
  }
  if (fault === 'drop') {
    job.fail();
    // A partial body, then the connection ends: what a crashing engine leaves behind.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(`{"id":"${id}","object":"chat.completion","created":${created},`);
    dropConnection(res);
    return;
  }
  job.finish(plan.finishReason);
  const { reasoningTokens, total, promptTokens } = plan;
  const usage: Record<string, unknown> = {
    prompt_tokens: promptTokens,
    total_tokens: promptTokens + total,
    completion_tokens: total,
    prompt_tokens_details: null,
  };
  if (plan.model.reasoning) usage.completion_tokens_details = { reasoning_tokens: reasoningTokens };
  const body = {
    id,
    object: 'chat.completion',
    created,
    model: plan.model.name,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: joinWords(plan.words, reasoningTokens, total),
          refusal: null,
          annotations: null,
          audio: null,
          function_call: null,
          tool_calls: [],
          reasoning: reasoningTokens > 0 ? joinWords(plan.words, 0, reasoningTokens) : null,
        },
        logprobs: null,
        finish_reason: plan.finishReason,
        stop_reason: null,
        token_ids: null,
      },
    ],
    service_tier: null,
    system_fingerprint: null,
    usage,
    prompt_logprobs: null,
    prompt_token_ids: null,
    kv_transfer_params: null,
  };
  sendJson(res, 200, JSON.stringify(body));
}

// vLLM reports reasoning tokens when a reasoning parser runs.
function reasoningDetails(plan: ChatPlan): string {
  return plan.model.reasoning ? `,"completion_tokens_details":{"reasoning_tokens":${plan.reasoningTokens}}` : '';
}

/**
 * Ends the connection without finishing the response (no [DONE], no final
 * chunk), after what was written so far has been flushed.
 *
 * @example
 * dropConnection(res);
 */
function dropConnection(res: ServerResponse): void {
  const socket = res.socket;
  if (!socket) return;
  socket.end(() => socket.destroy());
}
