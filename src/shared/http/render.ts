import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { envelopeOf, GatewayError } from './errors.js';
import { describeError, type Logger } from './log.js';

/**
 * Turns anything thrown on the request path into the spec's envelope.
 * Only `GatewayError` messages reach the client; anything else is a 500 with a
 * fixed message, and its detail goes to the log with the request id.
 */
export function renderError(error: unknown, c: Context, log: Logger): Response {
  const gatewayError = toGatewayError(error);
  if (gatewayError.status >= 500) {
    // An unreachable store or Redis is logged once per outage where it is detected; each request
    // refused meanwhile only at debug.
    const level = OUTAGE_CODES.has(gatewayError.code) ? 'debug' : 'error';
    log[level]('request failed', {
      requestId: c.get('requestId'),
      method: c.req.method,
      path: c.req.path,
      code: gatewayError.code,
      ...describeError(gatewayError.cause ?? error),
    });
  }
  for (const [name, value] of Object.entries(gatewayError.headers ?? {})) c.header(name, value);
  return c.json(envelopeOf(gatewayError), gatewayError.status as 400);
}

const OUTAGE_CODES: ReadonlySet<string> = new Set(['billing_unavailable', 'limits_unavailable']);

function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  // Hono's own limits (body size) throw HTTPException; keep their status, use our codes.
  if (error instanceof HTTPException && error.status === 413) {
    return new GatewayError('request_too_large', 'The request body is too large.', { cause: error });
  }
  return new GatewayError('internal_error', 'The gateway failed to handle this request.', { cause: error });
}

export function renderNotFound(c: Context, log: Logger): Response {
  return renderError(new GatewayError('not_found', `There is no route ${c.req.method} ${c.req.path}.`), c, log);
}
