import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { type ErrorCode, type ErrorDetail, GatewayError } from '../../shared/http/errors.js';
import { describeError, type Logger } from '../../shared/http/log.js';

/**
 * The generic API's codes (the second spec's envelope), upper-case; `/v1`'s gateway routes keep
 * their own.
 */
export type ApiErrorCode =
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_ERROR';

/** Each gateway code as the generic API names it. */
const API_CODE_OF: Partial<Record<ErrorCode, ApiErrorCode>> = {
  invalid_request: 'VALIDATION_ERROR',
  invalid_json: 'VALIDATION_ERROR',
  unsupported_media_type: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  project_not_found: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  method_not_allowed: 'METHOD_NOT_ALLOWED',
  conflict: 'CONFLICT',
  key_limit_reached: 'CONFLICT',
  request_too_large: 'PAYLOAD_TOO_LARGE',
  rate_limit_exceeded: 'RATE_LIMITED',
  billing_unavailable: 'SERVICE_UNAVAILABLE',
  limits_unavailable: 'SERVICE_UNAVAILABLE',
  runner_unavailable: 'SERVICE_UNAVAILABLE',
  node_access_unavailable: 'SERVICE_UNAVAILABLE',
  server_busy: 'SERVICE_UNAVAILABLE',
};

export interface ApiErrorEnvelope {
  error: { code: ApiErrorCode; message: string; details: ErrorDetail[] };
}

/**
 * Renders anything thrown under the generic API as its envelope:
 * `{"error": {"code": "VALIDATION_ERROR", "message": "...", "details": [{"field", "message"}]}}`.
 * `details` is always there (empty when no field is at fault). Errors the
 * client did not cause are logged with the request id, never shown.
 */
export function renderApiError(error: unknown, c: Context, log: Logger): Response {
  const gatewayError =
    error instanceof GatewayError
      ? error
      : error instanceof HTTPException && error.status === 413
        ? new GatewayError('request_too_large', 'The request body is too large.')
        : new GatewayError('internal_error', 'The server failed to handle this request.', { cause: error });
  const code = API_CODE_OF[gatewayError.code] ?? 'INTERNAL_ERROR';
  if (gatewayError.status >= 500 && code === 'INTERNAL_ERROR') {
    log.error('request failed', {
      requestId: c.get('requestId'),
      method: c.req.method,
      path: c.req.path,
      ...describeError(gatewayError.cause ?? error),
    });
  }
  for (const [name, value] of Object.entries(gatewayError.headers ?? {})) c.header(name, value);
  const body: ApiErrorEnvelope = {
    error: { code, message: gatewayError.message, details: gatewayError.details ?? [] },
  };
  return c.json(body, gatewayError.status as 400);
}
