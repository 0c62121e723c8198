import { GatewayError } from '../../shared/http/errors.js';
import type { UpstreamTarget } from '../engines/types.js';
import { sanitizeUpstreamMessage, upstreamErrorMessage } from './sanitize.js';

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

/** What an engine's error answer is told apart by: the names its message may show, and hide. */
interface FailedCall {
  target: Pick<UpstreamTarget, 'servedModelName'>;
  clientModel: string;
}

/**
 * An engine's error answer as the client is told it: the client's own mistakes (400, 422, and
 * llama.cpp's refusals of its input) with the engine's message, sanitized; a busy engine as 503;
 * every other failure with a fixed message. An `UpstreamError` may be retried on another replica.
 */
export function upstreamFailure(status: number, body: string, call: FailedCall): GatewayError {
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
