import { tokenBoundsOf } from '../billing/token-bounds.js';
import type { Config } from '../../config/types.js';
import type { AuthorizedRequest } from './authorize.js';

/**
 * Whether a call is streamed from the engine. A stream always is; a JSON call is when it may
 * generate more than one checkpoint (`TOLLGATE_STREAM_CHECKPOINT_TOKENS`), so that cut at any point
 * it is billed the engine's running count, within one checkpoint (`json-answer.ts` assembles its
 * answer from the chunks). One whose completion bound (its `max_tokens` for every choice, as its
 * hold counts it) is a checkpoint at most is asked for JSON: one read of the engine's answer, not
 * one a token (a read costs the gateway more CPU than anything else about a chunk), and cut, it is
 * billed its prompt and no completion, within one checkpoint of what the engine generated.
 *
 * @example
 * streamedFromEngine(request, config, { max_tokens: 32 }); // false, at the default 100-token checkpoint
 */
export function streamedFromEngine(
  request: AuthorizedRequest,
  config: Pick<Config, 'streamCheckpoint'>,
  bounded: Record<string, unknown>,
): boolean {
  if (request.body.stream === true) return true;
  const bounds = tokenBoundsOf({
    bodyBytes: 0,
    body: bounded,
    task: 'chat',
    contextLength: request.model.contextLength,
  });
  return bounds.completionTokens > config.streamCheckpoint.everyTokens;
}
