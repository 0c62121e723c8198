import { GatewayError } from '../http/errors.js';

/** POST /v1/audio/transcriptions: announced by the spec, not built yet. */
export function transcriptions(): never {
  throw new GatewayError('not_implemented', 'Audio transcription is coming soon; this endpoint is not available yet.');
}
