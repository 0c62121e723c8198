import type { Context } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readJsonObject } from '../../shared/http/request.js';
import type { V1Deps } from './deps.js';

type Json = Record<string, unknown>;

/**
 * The body of a count (`/v1/messages/count_tokens`, `/v1/responses/input_tokens`): at most
 * TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES (and the gateway's body bound), a larger one a 413 naming
 * the setting.
 */
export async function readCountBody(c: Context<GatewayEnv>, deps: V1Deps): Promise<Json> {
  const maxBytes = Math.min(deps.config.countTokensMaxBodyBytes, deps.config.maxBodyBytes);
  const { body } = await readJsonObject(c, maxBytes, deps.config.oversizeDrain, deps.config.maxJsonDepth).catch(
    (error: unknown) => {
      if (error instanceof GatewayError && error.code === 'request_too_large') throw countTooLarge(maxBytes);
      throw error;
    },
  );
  return body;
}

function countTooLarge(maxBytes: number): GatewayError {
  return new GatewayError(
    'request_too_large',
    `The request body is larger than the ${maxBytes}-byte limit of a count (TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES).`,
    { headers: { connection: 'close' } },
  );
}
