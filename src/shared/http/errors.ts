export type ErrorType =
  | 'invalid_request_error'
  | 'auth_error'
  | 'billing_error'
  | 'rate_limit_error'
  | 'not_implemented'
  | 'upstream_error'
  | 'server_error';

/** Every code a client can see, with its status and type. The spec's codes first, then ours. */
const ERROR_CODES = {
  model_not_found: { status: 400, type: 'invalid_request_error' },
  unauthorized: { status: 401, type: 'auth_error' },
  insufficient_funds: { status: 402, type: 'billing_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  tokens_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  concurrency_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  monthly_quota_exceeded: { status: 429, type: 'rate_limit_error' },
  not_implemented: { status: 501, type: 'not_implemented' },
  billing_unavailable: { status: 503, type: 'billing_error' },
  pricing_unavailable: { status: 503, type: 'billing_error' },
  upstream_error: { status: 502, type: 'upstream_error' },
  // Not in the spec's table; each is documented in docs/errors-and-limits.md.
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  project_not_found: { status: 403, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  previous_response_not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  key_limit_reached: { status: 409, type: 'invalid_request_error' },
  budget_exceeded: { status: 429, type: 'rate_limit_error' },
  request_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  forbidden: { status: 403, type: 'auth_error' },
  limits_unavailable: { status: 503, type: 'server_error' },
  responses_unavailable: { status: 503, type: 'server_error' },
  files_unavailable: { status: 503, type: 'server_error' },
  batches_unavailable: { status: 503, type: 'server_error' },
  runner_unavailable: { status: 503, type: 'server_error' },
  node_access_unavailable: { status: 503, type: 'server_error' },
  server_busy: { status: 503, type: 'server_error' },
  overloaded: { status: 503, type: 'server_error' },
  internal_error: { status: 500, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: ErrorType }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  field: string;
  message: string;
}

export interface GatewayErrorOptions {
  /** Overrides the code's usual status (e.g. 404 for `model_not_found` on GET /v1/models/{id}). */
  status?: number;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
  /** Kept for the log line only; never shown to the client. */
  cause?: unknown;
}

/**
 * The one error class of the gateway. Thrown anywhere, and turned into a
 * response once per surface, in its `onError`: the spec's envelope for
 * `/v1` and `/admin/v1` (`render.ts`, in `app.onError`), the generic API's
 * for `/api/v1` and `/auth` (`surfaces/api/errors.ts`), an error page for the
 * portal (`surfaces/portal/index.tsx`).
 *
 * @example
 * throw new GatewayError('model_not_found', 'The model `foo` does not exist.');
 */
export class GatewayError extends Error {
  override name = 'GatewayError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly details?: ErrorDetail[];
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.details = options.details;
    this.headers = options.headers;
  }
}

export interface ErrorEnvelope {
  /** `param` is OpenAI's: the offending field, or null; SDKs read it. */
  error: { message: string; type: ErrorType; param: string | null; code: ErrorCode; details?: ErrorDetail[] };
}

export function envelopeOf(error: GatewayError): ErrorEnvelope {
  const body: ErrorEnvelope['error'] = {
    message: error.message,
    type: error.type,
    param: error.details?.[0]?.field ?? null,
    code: error.code,
  };
  if (error.details) body.details = error.details;
  return { error: body };
}
