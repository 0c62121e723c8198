import { Hono } from 'hono';
import { requireKey } from '../../gateway/requests/auth.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { V1Deps } from './deps.js';

/**
 * `POST /v1/audio/transcriptions`: announced by the spec, not built yet (501
 * to a caller with a key; a stranger gets 401 as on every keyed route).
 *
 * @example
 * v1.route('/audio', audioRoutes(deps));
 */
export function audioRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const audio = new Hono<GatewayEnv>();
  audio.post('/transcriptions', requireKey(deps.keys), () => {
    throw new GatewayError(
      'not_implemented',
      'Audio transcription is coming soon; this endpoint is not available yet.',
    );
  });
  return audio;
}
