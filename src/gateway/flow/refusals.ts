import { GatewayError } from '../../shared/http/errors.js';

/**
 * The refusal of a request that cannot wait for the fleet: 503 (529 on the Anthropic routes), with
 * Retry-After.
 */
export function overloaded(message: string): GatewayError {
  return new GatewayError('overloaded', message, { headers: { 'Retry-After': '2' } });
}
