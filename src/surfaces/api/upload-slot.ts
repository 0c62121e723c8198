import type { Context, MiddlewareHandler } from 'hono';
import type { BodyDrain } from '../../config/index.js';
import type { UploadSlots } from '../../platform/stacks/upload-slots.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { discardBody } from '../../shared/http/drain.js';
import { GatewayError } from '../../shared/http/errors.js';

/**
 * A stack upload (the API's `POST /stacks`, the portal's upload form) is
 * read only in one of the process's upload slots (`stacks/upload-slots.ts`),
 * taken before its body is read and given back when the answer is made;
 * `read` then reads it under its body limit. An upload refused its slot
 * (429, 503) is answered after its body is read and thrown away, within
 * TOLLGATE_OVERSIZE_DRAIN_BYTES and _MS, with `Connection: close`: a client
 * writes its whole 10 MiB before it reads, and a socket closed under it is
 * a broken pipe, not the answer (Hono's node server drains for 500 ms only).
 *
 * @example
 * api.use('/stacks', inUploadSlot(deps.uploads, config.oversizeDrain, (c) => c.get('actor').userId, uploadLimit));
 */
export function inUploadSlot(
  slots: UploadSlots,
  drain: BodyDrain,
  userOf: (c: Context<GatewayEnv>) => string | Promise<string>,
  read: MiddlewareHandler<GatewayEnv>,
): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    let release: () => void;
    try {
      release = slots.take(await userOf(c));
    } catch (error) {
      await discardBody(c, drain);
      if (!(error instanceof GatewayError)) throw error;
      throw new GatewayError(error.code, error.message, {
        details: error.details,
        headers: Object.assign({}, error.headers, { connection: 'close' }),
      });
    }
    try {
      return await read(c, next);
    } finally {
      release();
    }
  };
}
