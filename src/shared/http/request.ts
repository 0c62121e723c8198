import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import type { BodyDrain } from '../../config/index.js';
import { newId } from '../db/ids.js';
import type { GatewayEnv } from './context.js';
import { GatewayError } from './errors.js';
import { readDeclared } from './declared-body.js';
import { discardRest } from './drain.js';
import { checkJsonShape } from './json-shape.js';
import type { ParsedBody, RepeatedMembers } from './repeated-members.js';

/**
 * Gives every request an id, returned in `x-request-id` and used as the usage
 * record's id. The gateway makes its own: a client-sent id is not trusted to be unique.
 */
export function requestId(): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const id = newId('req');
    c.set('requestId', id);
    c.header('x-request-id', id);
    // Lines about a request name it themselves (a `requestId` field): an AsyncLocalStorage would
    // bind it for them, but on Node 20 its promise hooks cost every request about a millisecond
    // (measured with bench/).
    await next();
  };
}

/**
 * Reads the body as a JSON object, refusing more than `maxBytes` (413) and
 * anything that is not a JSON object (400), before any other work. Returns
 * the object, its size in bytes, and the bytes themselves (parsed once here).
 * With `repeated`, the members its sender sent alike before are not parsed
 * again (`RepeatedMembers`).
 *
 * @example
 * const { body, bytes } = await readJsonObject(c, config.maxBodyBytes, config.oversizeDrain);
 */
export async function readJsonObject(
  c: Context,
  maxBytes: number,
  drain: BodyDrain,
  maxDepth?: number,
  repeated?: { members: RepeatedMembers; sender: string },
): Promise<{ body: Record<string, unknown>; bytes: number; raw: Buffer }> {
  const length = headerOf(c, 'content-length');
  const declared = length === undefined ? Number.NaN : Number(length);
  if (Number.isFinite(declared) && declared > maxBytes) return refuseDeclared(c, declared, maxBytes, drain);
  let bytes: Buffer;
  if (Number.isFinite(declared)) {
    // The usual case: the length is declared (and the HTTP parser holds the body to it), so the
    // body is read whole, straight from Node's request, without building a web Request and stream.
    const incoming = (c.env as NodeBindings | undefined)?.incoming;
    bytes = incoming ? await readDeclared(incoming, declared) : Buffer.from(await c.req.arrayBuffer());
  } else {
    const raw = c.req.raw.body;
    if (!raw) throw new GatewayError('invalid_json', 'The request body is empty; send a JSON object.');
    bytes = Buffer.from(await readCapped(raw, maxBytes, drain));
  }
  if (bytes.length === 0) throw new GatewayError('invalid_json', 'The request body is empty; send a JSON object.');
  const size = bytes.length;
  let parsed: ParsedBody;
  try {
    parsed = repeated
      ? repeated.members.parse(repeated.sender, bytes)
      : { body: JSON.parse(bytes.toString('utf8')), fill: () => {} };
  } catch {
    throw new GatewayError('invalid_json', 'The request body is not valid JSON.');
  }
  const { body } = parsed;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_json', 'The request body must be a JSON object.');
  }
  // Bodies go to the engine as they are (text with NUL included), but nothing may nest deep enough
  // to overflow a stack. Members kept from the sender's earlier bodies were checked then, in the
  // same place.
  checkJsonShape(body, { storable: false, maxDepth });
  parsed.fill();
  return { body: body as Record<string, unknown>, bytes: size, raw: bytes };
}

/**
 * 413, with `Connection: close`: the rest of the body may not have been read
 * (past the drain's bounds), so the connection cannot carry another request.
 * Said outright, a keep-alive client opens a new one instead of sending its
 * next request into a socket about to close.
 */
function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError('request_too_large', `The request body is larger than the ${maxBytes}-byte limit.`, {
    headers: { connection: 'close' },
  });
}

/**
 * Reads a body of any length into one buffer, counting the bytes as they
 * arrive; past `maxBytes` it reads and discards the rest (within `drain`)
 * and throws the 413, so an oversized body is never held whole.
 */
async function readCapped(stream: ReadableStream<Uint8Array>, maxBytes: number, drain: BodyDrain): Promise<Uint8Array> {
  const reader = stream.getReader();
  let size = 0;
  let buffer = new Uint8Array(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return buffer.subarray(0, size);
    const offset = size;
    size += value.byteLength;
    if (size > maxBytes) {
      await discardRest(reader, drain);
      throw tooLarge(maxBytes);
    }
    if (size > buffer.length) {
      const grown = new Uint8Array(Math.min(maxBytes, Math.max(size, buffer.length * 2)));
      grown.set(buffer.subarray(0, offset));
      buffer = grown;
    }
    buffer.set(value, offset);
  }
}

/**
 * The 413 of a body whose declared length is over `maxBytes`: its bytes are discarded first when
 * the drain can take them all.
 */
async function refuseDeclared(c: Context, declared: number, maxBytes: number, drain: BodyDrain): Promise<never> {
  // A body longer than the drain would be cut anyway: the answer goes at once, and the client may
  // not read it.
  if (declared <= drain.bytes && c.req.raw.body) await discardRest(c.req.raw.body.getReader(), drain);
  throw tooLarge(maxBytes);
}

/**
 * The largest body the management API (and the portal) takes: their requests are small forms and
 * JSON objects.
 */
export const MANAGEMENT_MAX_BODY_BYTES = 256 * 1024;

/**
 * Refuses a body over `maxBytes` with 413 `request_too_large`, counting the
 * bytes as they arrive (a chunked body without Content-Length included), so
 * an oversized body is never buffered whole; what the client still sends is
 * read and discarded within `drain` first, so that it reads the 413. For
 * routes that read bodies with `c.req.text()`/`json()`; /v1 reads through
 * `readJsonObject`. Hono's `bodyLimit` does the same counting but gives its
 * `onError` no way to the rest of the body (its reader is its own).
 *
 * @example
 * admin.use('*', limitBody(MANAGEMENT_MAX_BODY_BYTES, config.oversizeDrain));
 */
export function limitBody(maxBytes: number, drain: BodyDrain): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const length = headerOf(c, 'content-length');
    if (length !== undefined && headerOf(c, 'transfer-encoding') === undefined) {
      const declared = Number(length);
      return declared > maxBytes ? refuseDeclared(c, declared, maxBytes, drain) : next();
    }
    c.req.raw = new Request(c.req.raw, { body: await readCapped(body, maxBytes, drain) });
    return next();
  };
}

/**
 * Refuses a request body that is not declared as JSON (415), on routes a
 * browser's session cookie can reach: a form on another site can post
 * `text/plain` or form data with the cookie, but not `application/json`
 * without a CORS preflight (which these routes never grant). A body without
 * any Content-Type (a no-cors fetch of a Blob) is refused too. `multipart`
 * also takes `multipart/form-data` (stack uploads).
 *
 * @example
 * auth.use('*', requireJsonBody());
 */
export function requireJsonBody(options: { multipart?: boolean } = {}): MiddlewareHandler {
  const accepted = options.multipart ? ['application/json', 'multipart/form-data'] : ['application/json'];
  const message = options.multipart
    ? 'Send JSON, or a package as multipart/form-data.'
    : 'Send the body as JSON, with Content-Type: application/json.';
  return async (c, next) => {
    const hasBody =
      c.req.header('content-length') !== undefined
        ? c.req.header('content-length') !== '0'
        : c.req.header('transfer-encoding') !== undefined;
    const type = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (hasBody && (type === undefined || !accepted.includes(type))) {
      throw new GatewayError('unsupported_media_type', message, {
        details: [{ field: 'content-type', message: `Must be ${accepted.join(' or ')}.` }],
      });
    }
    await next();
  };
}

/**
 * What @hono/node-server passes a handler as `c.env`: Node's own request and response. Absent under
 * `app.request` (tests).
 */
interface NodeBindings {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

/**
 * One request header. Served by @hono/node-server, it is read from the
 * headers Node's parser already made: `c.req.header` first builds a web
 * `Headers` of every header, checking each name and value, which costs a
 * billed request more than its own checks (docs/benchmark.md#cpu-per-request).
 * As with `Headers`, repeated headers are joined with ", ", except those Node
 * keeps once (Authorization, Content-Length, Host, …): the first one counts.
 *
 * @example
 * const authorization = headerOf(c, 'authorization');
 */
export function headerOf(c: Context, name: string): string | undefined {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (!incoming) return c.req.header(name);
  const value = incoming.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Calls `onLeave` once if the client closes its connection before the
 * response is complete, at once if it already has; returns a function that
 * stops listening. Under @hono/node-server this listens on Node's response:
 * `c.req.raw.signal` would make an `AbortController` for every request.
 *
 * @example
 * const stop = whenClientLeaves(c, () => upstream.abort());
 */
export function whenClientLeaves(c: Context, onLeave: () => void): () => void {
  const outgoing = (c.env as NodeBindings | undefined)?.outgoing;
  if (!outgoing) {
    const signal = c.req.raw.signal;
    if (signal.aborted) {
      onLeave();
      return () => {};
    }
    signal.addEventListener('abort', onLeave, { once: true });
    return () => signal.removeEventListener('abort', onLeave);
  }
  if (outgoing.destroyed && !outgoing.writableFinished) {
    onLeave();
    return () => {};
  }
  const onClose = () => {
    if (!outgoing.writableFinished) onLeave();
  };
  outgoing.once('close', onClose);
  return () => outgoing.off('close', onClose);
}

/**
 * How long a stream's headers wait for its first chunk to leave with it: longer than a short
 * prefill takes, shorter than any client's patience for headers.
 */
export const STREAM_HEADERS_WAIT_MS = 50;

/**
 * Lets a streamed response's headers leave in the same write as its first
 * chunk. @hono/node-server writes a stream's headers on their own
 * (`flushHeaders`): a socket write of their own, about 7 % of a stream's CPU
 * at 32 connections (CONTRIBUTING.md, "Measured on the request path"). Here that flush waits
 * up to `STREAM_HEADERS_WAIT_MS`, and is skipped if a chunk took the headers
 * with it by then; a stream whose first chunk is slower (a long prefill)
 * gets its headers that much later, and its first token no later.
 *
 * @example
 * headersWithFirstChunk(c);
 * return c.body(stream, 200, SSE_HEADERS);
 */
export function headersWithFirstChunk(c: Context): void {
  const outgoing = (c.env as NodeBindings | undefined)?.outgoing;
  if (!outgoing) return;
  const flushNow = outgoing.flushHeaders.bind(outgoing);
  // `headersSent` is already true once `writeHead` stored them; Node's `_headerSent` says whether
  // they left.
  const sent = outgoing as unknown as { _headerSent: boolean };
  outgoing.flushHeaders = () => {
    setTimeout(() => {
      if (!sent._headerSent && !outgoing.destroyed) flushNow();
    }, STREAM_HEADERS_WAIT_MS).unref();
  };
}
