import { randomUUID } from 'node:crypto';
import { invalidBody, modelNotFound } from './errors.js';
import { optionalBoolean, type JsonObject } from './fields.js';
import { forEachMessageText } from './prompt.js';
import type { ResolvedModel, SimState } from './state.js';
import { splitTokens, tokenId } from './tokens.js';

/** What GET /version reports. */
export const SIM_VERSION = '0.11.0+sim';

// Fixed ids for the chat template's special tokens, Qwen-style.
const IM_START = 151644;
const NEWLINE = 198;

/**
 * The body of `GET /v1/models`: one card per served model, vLLM's shape.
 *
 * @example
 * JSON.parse(modelsJson(state)).data[0].max_model_len; // 4096
 */
export function modelsJson(state: SimState): string {
  const created = Math.floor(Date.now() / 1000);
  const data = state.modelList.map((model) => ({
    id: model.name,
    object: 'model',
    created,
    owned_by: 'vllm',
    root: model.name,
    parent: null,
    max_model_len: model.maxModelLen,
    permission: [
      {
        id: `modelperm-${randomUUID().replaceAll('-', '')}`,
        object: 'model_permission',
        created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ],
  }));
  return JSON.stringify({ object: 'list', data });
}

/**
 * The body of `POST /tokenize` for `{model?, prompt}` or `{model?, messages, tools?}`.
 * Counts agree with what chat requests report as prompt_tokens.
 *
 * @example
 * tokenizeJson(state, { prompt: 'Hello world' }); // '{"count":2,"max_model_len":4096,...}'
 */
export function tokenizeJson(state: SimState, body: JsonObject): string {
  const model = tokenizerModel(state, body.model);
  const withStrings = optionalBoolean(body, 'return_token_strs') ?? false;
  const strings: string[] = [];
  const tokens: number[] = [];
  const push = (id: number, text: string): void => {
    tokens.push(id);
    if (withStrings) strings.push(text);
  };
  if (typeof body.prompt === 'string') {
    for (const token of splitTokens(body.prompt)) push(tokenId(token), token);
  } else if (Array.isArray(body.messages)) {
    forEachMessageText(body.messages, (_index, role, text) => {
      if (text === null) {
        // The 3 template tokens chat counts per message (TOKENS_PER_MESSAGE).
        push(IM_START, '<|im_start|>');
        push(tokenId(role), role);
        push(NEWLINE, '\n');
        return;
      }
      for (const token of splitTokens(text)) push(tokenId(token), token);
    });
    // The generation prompt: the 3 tokens of TOKENS_PER_REPLY.
    push(IM_START, '<|im_start|>');
    push(tokenId('assistant'), 'assistant');
    push(NEWLINE, '\n');
    // The tools' definitions, as chat counts them (vLLM's template writes them into the prompt
    // too).
    if (Array.isArray(body.tools))
      for (const token of splitTokens(JSON.stringify(body.tools))) push(tokenId(token), token);
  } else {
    throw invalidBody(['prompt'], 'missing', 'Field required');
  }
  return JSON.stringify({
    count: tokens.length,
    max_model_len: model.maxModelLen,
    tokens,
    token_strs: withStrings ? strings : null,
  });
}

function tokenizerModel(state: SimState, requested: unknown): ResolvedModel {
  if (requested === undefined || requested === null) return state.modelList[0] as ResolvedModel;
  const model = typeof requested === 'string' ? state.models.get(requested) : undefined;
  if (!model) throw modelNotFound(requested);
  return model;
}
