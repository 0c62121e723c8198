import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { ENGINE_TRAITS } from '../engines/kinds.js';
import { countChatPrompt } from '../engines/prompt-count.js';
import type { UpstreamTarget } from '../engines/types.js';
import { GatewayError } from '../../shared/http/errors.js';
import { checkJsonShape } from '../../shared/http/json-shape.js';
import { sanitizeUpstreamMessage, upstreamErrorMessage } from './sanitize.js';
import { liftNumberArrays } from './lifted-arrays.js';
import type { CallAbort } from './call-abort.js';
import { WrittenJson } from './client-body.js';
import type { EngineAgents } from './engine-agents.js';

/**
 * An engine that failed before sending anything the client could see. Only such failures may be
 * retried on another replica; `unreachable` ones also take the replica out of rotation until its
 * health check passes.
 */
export class UpstreamError extends GatewayError {
  override name = 'UpstreamError';
  constructor(
    readonly failure: 'unreachable' | 'status',
    ...args: ConstructorParameters<typeof GatewayError>
  ) {
    super(...args);
  }
}

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

function post(
  url: string,
  body: string | WrittenJson,
  headers: Record<string, string>,
  abort: CallAbort,
  agents: EngineAgents,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const target = agents.parsed(url);
    const client = target.https ? https : http;
    // The URL's parts named, not `{ ...target.options, method, … }`: V8 (Node 20) takes a slow
    // path, about 2 µs, for a spread followed by properties its source lacks, and Object.assign
    // from URL options was not much faster (CONTRIBUTING, "Measured on the request path").
    const { protocol, hostname, port, path, auth } = target.options;
    let answered = false;
    const send = (agent: http.Agent | false) => {
      const request = client.request(
        {
          protocol,
          hostname,
          port,
          path,
          auth,
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': typeof body === 'string' ? Buffer.byteLength(body) : body.length,
            accept: 'application/json, text/event-stream',
            ...headers,
          },
        },
        (response) => {
          answered = true;
          resolve(response);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        // A kept-alive connection the engine had closed (llama.cpp's server, after a stream, though
        // its answer said keep-alive): reset unread. Sent again once, on a connection of its own.
        if (agent && !answered && request.reusedSocket && error.code === 'ECONNRESET' && !abort.aborted) send(false);
        else reject(error);
      });
      // Destroyed, the request fails (before its answer) or ends its answer's body with the error
      // (after); once its answer has ended Node has marked it destroyed, so a late abort leaves its
      // connection (another call's by then).
      abort.onAbort((error) => request.destroy(error));
      if (typeof body === 'string') request.end(body);
      else {
        // Written before the socket is attached, the parts go out together in one `writev`.
        for (const part of body.parts) request.write(part);
        request.end();
      }
    };
    send(target.https ? agents.https : agents.http);
  });
}

/** The body, at most `maxBytes` of it (the rest is not read). */
async function readBytes(response: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= maxBytes) {
      response.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}

function upstreamFailure(status: number, body: string, call: UpstreamCall): GatewayError {
  // The log gets the status and size only: an engine's error text may quote the prompt.
  const cause = new Error(`upstream answered ${status} (${body.length} characters of error body)`);
  if (status === 400 || status === 422) {
    const message = sanitizeUpstreamMessage(upstreamErrorMessage(body), {
      servedName: call.target.servedModelName,
      clientName: call.clientModel,
    });
    return new GatewayError('invalid_request', message, { cause });
  }
  // llama.cpp answers some refusals of the client's input with a 500 (an image to a text model) or
  // a 501: the client's to fix, so a 400 with the engine's message, not a retry on another replica.
  if ((status === 500 || status === 501) && refusesInput(body)) {
    const message = sanitizeUpstreamMessage(upstreamErrorMessage(body), {
      servedName: call.target.servedModelName,
      clientName: call.clientModel,
    });
    return new GatewayError('invalid_request', message, { cause });
  }
  if (status === 413)
    return new GatewayError('request_too_large', 'The request is too large for this model.', { cause });
  if (status === 429 || status === 503) {
    return new UpstreamError('status', 'upstream_error', 'The model server is busy. Retry later.', {
      status: 503,
      headers: { 'Retry-After': '2' },
      cause,
    });
  }
  if (status >= 500)
    return new UpstreamError('status', 'upstream_error', 'The model server failed to answer. Retry later.', { cause });
  return new GatewayError('upstream_error', 'The model server failed to answer. Retry later.', { cause });
}

/**
 * llama.cpp's messages for input it cannot take: media a text model has no projector for ("image
 * input is not supported"), a feature it lacks, a field of the wrong JSON type (its JSON library's
 * exceptions).
 */
const INPUT_REFUSAL = /\bis not supported\b|^\[json\.exception\./;

function refusesInput(body: string): boolean {
  return INPUT_REFUSAL.test(upstreamErrorMessage(body)) || /"type"\s*:\s*"not_supported_error"/.test(body);
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'TimeoutError';
}

/**
 * An engine's JSON answer as an object. An answer that is not a JSON object (an HTML error page
 * from a proxy, a truncated body) is the engine's fault: 502 `upstream_error` with a fixed message,
 * nothing of the body shown. The arrays of numbers under `liftKey` are kept out of the parse
 * (`liftNumberArrays`): the answer holds a marker in their place, and `restore` puts them back
 * into the text written from it, as bytes.
 *
 * @example
 * const { answer, restore } = await readEngineAnswer(response, 'embedding');
 * const bytes = restore(JSON.stringify(answer));
 */
export async function readEngineAnswer(
  response: EngineResponse,
  liftKey?: string,
): Promise<{ answer: Record<string, unknown>; restore: (written: string) => string | Buffer<ArrayBuffer> }> {
  const bytes = await response.bytes();
  const lifted =
    liftKey === undefined
      ? { text: bytes.toString('utf8'), restore: (written: string) => written }
      : liftNumberArrays(bytes, liftKey);
  const text = lifted.text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new GatewayError('upstream_error', 'The model server sent an answer that is not JSON.', { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new GatewayError('upstream_error', 'The model server sent an answer that is not a JSON object.');
  }
  try {
    checkJsonShape(parsed, { storable: false });
  } catch (error) {
    throw new GatewayError('upstream_error', 'The model server sent an answer nested too deeply.', { cause: error });
  }
  return { answer: parsed as Record<string, unknown>, restore: lifted.restore };
}
