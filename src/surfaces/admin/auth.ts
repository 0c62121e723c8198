import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { GatewayError } from '../../shared/http/errors.js';

/**
 * Guards the management API with the operator token. Both sides are hashed
 * first so the comparison is constant-time and independent of the token's
 * length; the token itself never reaches a log or an error message.
 *
 * @example
 * admin.use('*', operatorAuth(deps.adminToken));
 */
export function operatorAuth(adminToken: string): MiddlewareHandler {
  if (adminToken === '') throw new Error('the operator token must not be empty');
  const expected = digest(adminToken);
  return async (c, next) => {
    const presented = bearerToken(c.req.header('authorization'));
    if (!timingSafeEqual(digest(presented), expected)) {
      throw new GatewayError('unauthorized', 'Invalid operator token.');
    }
    await next();
  };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

function bearerToken(header: string | undefined): string {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header?.trim() ?? '');
  if (!match) {
    throw new GatewayError('unauthorized', 'Missing operator token. Send it as "Authorization: Bearer <token>".');
  }
  return match[1]!;
}
