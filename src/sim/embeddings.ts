import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { badRequest, internalError, invalidBody } from './errors.js';
import { MIDSTREAM_MESSAGE, type StreamFault } from './faults.js';
import { optionalInt, type JsonObject } from './fields.js';
import { sendError, sendJson } from './http.js';
import { Job } from './job.js';
import { findModel, type ResolvedModel, type SimState } from './state.js';
import { countTokens, createRandom, HASH_START, hashInt, hashText } from './tokens.js';

/** One embedding input: text, or token ids. */
type EmbeddingInput = string | readonly number[];

/** A validated embeddings request. */
export interface EmbeddingPlan {
  model: ResolvedModel;
  inputs: EmbeddingInput[];
  promptTokens: number;
  dimensions: number;
  base64: boolean;
}

/**
 * Validates an embeddings request like vLLM (input shapes, 404 model, 400 on
 * a chat model, per-input context length).
 *
 * @example
 * const plan = planEmbeddings(state, { model: 'sim-embed', input: ['a', 'b'] });
 */
export function planEmbeddings(state: SimState, body: JsonObject): EmbeddingPlan {
  const inputs = readInputs(body.input);
  const format = body.encoding_format;
  if (format !== undefined && format !== null && format !== 'float' && format !== 'base64') {
    throw invalidBody(['encoding_format'], 'literal_error', "Input should be 'float' or 'base64'");
  }
  const requestedDimensions = optionalInt(body, 'dimensions');
  const model = findModel(state, body.model, 'embedding');
  let dimensions = model.embeddingDimensions;
  if (requestedDimensions !== null) {
    // Matryoshka-style: any prefix length up to the model's size.
    if (requestedDimensions < 1 || requestedDimensions > dimensions) {
      throw badRequest(`dimensions must be between 1 and ${dimensions} for model "${model.name}".`, 'dimensions');
    }
    dimensions = requestedDimensions;
  }
  let promptTokens = 0;
  for (const input of inputs) {
    const tokens = typeof input === 'string' ? countTokens(input) : input.length;
    if (tokens > model.maxModelLen) {
      throw badRequest(
        `This model's maximum context length is ${model.maxModelLen} tokens. However, you requested ${tokens} tokens in the input for embedding generation. Please reduce the length of the input.`,
        'input_tokens',
      );
    }
    promptTokens += tokens;
  }
  return { model, inputs, promptTokens, dimensions, base64: format === 'base64' };
}

/**
 * Answers an embeddings request after the simulated prefill time (ttftMs).
 *
 * @example
 * await runEmbeddings(state, planEmbeddings(state, body), res, null);
 */
export async function runEmbeddings(
  state: SimState,
  plan: EmbeddingPlan,
  res: ServerResponse,
  fault: StreamFault | null,
): Promise<void> {
  const job = new Job(state, plan.model.name, res, plan.promptTokens);
  if (state.ttftMs > 0) await job.sleep(state.ttftMs);
  if (job.aborted) return;
  if (fault === 'midstream') {
    job.fail();
    sendError(res, internalError(MIDSTREAM_MESSAGE));
    return;
  }
  if (fault === 'drop') {
    job.fail();
    res.socket?.destroy();
    return;
  }
  const data = plan.inputs.map((input, index) => {
    const vector = embed(input, plan.dimensions);
    return { index, object: 'embedding', embedding: plan.base64 ? toBase64(vector) : Array.from(vector) };
  });
  job.finish('stop');
  const body = {
    id: `embd-${randomUUID().replaceAll('-', '')}`,
    object: 'list',
    created: Math.floor(Date.now() / 1000),
    model: plan.model.name,
    data,
    usage: {
      prompt_tokens: plan.promptTokens,
      total_tokens: plan.promptTokens,
      completion_tokens: 0,
      prompt_tokens_details: null,
    },
  };
  sendJson(res, 200, JSON.stringify(body));
}

/**
 * A deterministic unit vector for one input: same input, same vector. Values
 * are float32 so the float and base64 encodings carry identical numbers.
 *
 * @example
 * embed('hello', 64).length; // 64
 */
export function embed(input: EmbeddingInput, dimensions: number): Float32Array {
  let hash = HASH_START;
  if (typeof input === 'string') {
    hash = hashText(hashText(hash, 's'), input);
  } else {
    hash = hashText(hash, 't');
    for (const id of input) hash = hashInt(hash, id);
  }
  const next = createRandom(hash);
  const raw = new Float64Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    const value = next() / 0x80000000 - 1;
    raw[i] = value;
    norm += value * value;
  }
  norm = Math.sqrt(norm) || 1;
  const vector = new Float32Array(dimensions);
  for (let i = 0; i < dimensions; i++) vector[i] = (raw[i] ?? 0) / norm;
  return vector;
}

/**
 * Base64 of the little-endian float32 bytes, what the openai SDK decodes.
 *
 * @example
 * toBase64(new Float32Array([1])); // 'AACAPw=='
 */
function toBase64(vector: Float32Array): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i] ?? 0, i * 4);
  return bytes.toString('base64');
}

// str | str[] | int[] | int[][], as vLLM's EmbeddingCompletionRequest accepts.
function readInputs(input: unknown): EmbeddingInput[] {
  if (input === undefined) throw invalidBody(['input'], 'missing', 'Field required');
  if (typeof input === 'string') return [input];
  if (!Array.isArray(input)) throw invalidBody(['input'], 'string_type', 'Input should be a valid string');
  if (input.length === 0) throw badRequest('Input cannot be empty.', 'input');
  if (input.every((item) => typeof item === 'string')) return input;
  if (input.every(isTokenId)) return [input];
  if (input.every((item) => Array.isArray(item) && item.length > 0 && item.every(isTokenId)))
    return input as number[][];
  throw invalidBody(['input'], 'list_type', 'Input should be a string, a list of strings, or a list of token ids');
}

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
