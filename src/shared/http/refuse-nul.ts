import type { MiddlewareHandler } from 'hono';
import type { GatewayEnv } from './context.js';
import { GatewayError } from './errors.js';

/**
 * 404 for a path holding a NUL character: no route, id or name holds one
 * (nor can PostgreSQL look one up); 400 naming the query parameter that holds
 * one (`input_items?after=%00`: the route is there, the cursor is wrong). The
 * first middleware of every surface, so that the answer is in the surface's
 * envelope; on the generic API it follows the access check, so that the
 * answer is counted like any answer.
 */
export function refuseNul(): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const url = c.req.raw.url;
    if (url.includes('%00')) {
      const query = url.indexOf('?');
      if (query < 0 || url.slice(0, query).includes('%00'))
        throw new GatewayError('not_found', 'There is no such route or resource.');
      throw nulParameter(url.slice(query + 1));
    }
    await next();
  };
}

/**
 * The 400 for the first query parameter whose name or value holds a NUL; a name that holds one is
 * not repeated.
 */
function nulParameter(query: string): GatewayError {
  let field = 'query';
  for (const [name, value] of new URLSearchParams(query)) {
    if (!name.includes('\0') && !value.includes('\0')) continue;
    field = name.includes('\0') ? 'query' : name;
    break;
  }
  const what = field === 'query' ? "A query parameter's name" : `The query parameter ${field}`;
  return new GatewayError('invalid_request', `${what} holds a NUL character, which no value the gateway reads has.`, {
    details: [{ field, message: 'holds a NUL character' }],
  });
}
