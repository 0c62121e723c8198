import type { IncomingMessage } from 'node:http';
import { ENGINE_TRAITS } from '../engines/kinds.js';
import { countChatPrompt } from '../engines/prompt-count.js';
import type { UpstreamTarget } from '../engines/types.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { CallAbort } from './call-abort.js';
import { WrittenJson } from './client-body.js';
import type { EngineAgents } from './engine-agents.js';
import { post, readBytes } from './engine-post.js';
import { UpstreamError, upstreamFailure } from './upstream-failure.js';

export interface UpstreamCall {
  target: UpstreamTarget;
  /** Path below the target's `/v1`, e.g. `/chat/completions`. */
  path: string;
  /** The body, or its JSON already written (the client's own bytes, or a translation written once). */
  body: Record<string, unknown> | string | WrittenJson;
  /** Headers besides the target's own, e.g. the trace's `traceparent`. */
  headers?: Record<string, string>;
  /** The model name as the client wrote it, for messages. */
  clientModel: string;
  /** Ends the request early: its timeout, its client gone. */
  abort: CallAbort;
  /** The process's keep-alive connections to the engines (`engine-agents.ts`). */
  agents: EngineAgents;
}

/** An engine's successful answer: its body as it arrives (chunks for a stream), or whole. */
export interface EngineResponse {
  status: number;
  body: AsyncIterable<Uint8Array>;
  bytes(): Promise<Buffer>;
  /**
   * The chat prompt's tokens as the engine counts them (template included), for a stream cut before
   * its usage; null when it cannot.
   */
  countPrompt?(): Promise<number | null>;
  /** The body is `text/event-stream`: a JSON call's answer is then assembled from its chunks. */
  eventStream?: boolean;
}

/** An engine's error answer is read up to this size: enough for any message worth passing on. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

/**
 * POSTs to the engine and returns its response when it is a success. Every
 * failure becomes a `GatewayError` that says nothing about the engine: where it
 * runs, what it is, or what it printed, beyond a sanitized 4xx message.
 *
 * @example
 * const response = await postUpstream({ target, path: '/chat/completions', body, clientModel: 'qwen', abort });
 */
export async function postUpstream(call: UpstreamCall): Promise<EngineResponse> {
  refuseUnbillableChoices(call);
  let response: IncomingMessage;
  try {
    response = await post(
      call.target.baseUrl + call.path,
      bodyText(call.body),
      call.headers ? { ...call.target.headers, ...call.headers } : call.target.headers,
      call.abort,
      call.agents,
    );
  } catch (error) {
    if (call.abort.aborted && isTimeout(call.abort.reason)) {
      throw new GatewayError('upstream_error', 'The model server did not answer in time. Retry later.', {
        status: 504,
        cause: error,
      });
    }
    if (call.abort.aborted) throw error;
    throw new UpstreamError('unreachable', 'upstream_error', 'The model server could not be reached. Retry later.', {
      cause: error,
    });
  }
  const status = response.statusCode ?? 0;
  if (status >= 200 && status < 300)
    return {
      status,
      body: response,
      bytes: () => readBytes(response, Number.POSITIVE_INFINITY),
      // A body written as a string is parsed again only here, for a stream cut before any usage.
      countPrompt: () => countChatPrompt(call.target, fieldsOf(call.body)),
      eventStream: response.headers['content-type']?.startsWith('text/event-stream') === true,
    };
  const text = await readBytes(response, MAX_ERROR_BODY_BYTES).then(
    (bytes) => bytes.toString('utf8'),
    () => '',
  );
  throw upstreamFailure(status, text, call);
}

/**
 * An engine whose usage counts one choice's tokens (llama.cpp: 10 reported for
 * 20 generated with `n: 2`) would have every other choice served free: such a
 * request is refused before it is sent, naming the limit (docs/engines.md).
 */
function refuseUnbillableChoices(call: UpstreamCall): void {
  // A body written as a string is a translation (Messages, Responses), which never asks for more
  // than one choice.
  if (typeof call.body === 'string') return;
  const n = fieldsOf(call.body).n;
  if (typeof n !== 'number' || n <= 1) return;
  if (ENGINE_TRAITS[call.target.engineKind ?? 'vllm'].usageCountsEveryChoice) return;
  const message = `This model serves one choice per request: n must be 1 (got ${n}).`;
  throw new GatewayError('invalid_request', message, {
    details: [{ field: 'n', message: 'must be 1 for this model' }],
  });
}

function bodyText(body: UpstreamCall['body']): string | WrittenJson {
  if (typeof body === 'string') return body;
  return body instanceof WrittenJson ? body : JSON.stringify(body);
}

function fieldsOf(body: UpstreamCall['body']): Record<string, unknown> {
  if (typeof body === 'string') return jsonObjectOf(body);
  return body instanceof WrittenJson ? body.fields : body;
}

function jsonObjectOf(text: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'TimeoutError';
}
