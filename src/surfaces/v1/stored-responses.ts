import { type Context, Hono } from 'hono';
import { requireKey } from '../../gateway/requests/auth.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Services } from '../../services.js';

/** Longer than any id the gateway makes: such a path names no response, without a query. */
const MAX_ID_CHARS = 256;

/**
 * The same answer for an id that is unknown, expired, deleted or another
 * organization's: nothing in it tells them apart.
 */
function notFound(id: string): GatewayError {
  return new GatewayError('not_found', `No response with id \`${id.slice(0, MAX_ID_CHARS)}\` was found.`);
}

/** The path's response id, or a 404 when it cannot be one. */
function idOf(c: Context<GatewayEnv>): string {
  const id = c.req.param('id') ?? '';
  if (id.length === 0 || id.length > MAX_ID_CHARS) throw notFound(id);
  return id;
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}

/** `limit`, `order` and `after` of `GET …/input_items`, as OpenAI reads them (limit 1-100, default 20; order default desc). */
function pageOf(c: Context<GatewayEnv>): { after?: string; limit: number; order: 'asc' | 'desc' } {
  const { limit = '20', order = 'desc', after } = c.req.query();
  if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
    throw invalid('limit', 'must be a whole number from 1 to 100');
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc');
  if (after !== undefined && (after.length === 0 || after.length > MAX_ID_CHARS))
    throw invalid('after', 'must be the id of an input item');
  return { after, limit: Number(limit), order };
}

/**
 * `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}` and
 * `GET /v1/responses/{id}/input_items`: stored Responses read back and deleted
 * by a key of their organization (`gateway/responses/store.ts`). Created by
 * `POST /v1/responses`, in a file of its own.
 *
 * @example
 * v1.route('/responses', storedResponseRoutes(services));
 */
export function storedResponseRoutes(services: Services): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const auth = requireKey(services.keys);
  const store = services.responseStore;
  routes.get('/:id', auth, async (c) => {
    const id = idOf(c);
    // Streaming a stored response back is for OpenAI's background responses, which the gateway does
    // not run.
    if (c.req.query('stream') === 'true') throw invalid('stream', 'is not supported: a stored response is read whole');
    const stored = await store.get(c.get('caller').orgId, id);
    if (!stored) throw notFound(id);
    return c.json(stored.response);
  });
  routes.delete('/:id', auth, async (c) => {
    const id = idOf(c);
    if (!(await store.delete(c.get('caller').orgId, id))) throw notFound(id);
    return c.json({ id, object: 'response', deleted: true });
  });
  routes.get('/:id/input_items', auth, async (c) => {
    const id = idOf(c);
    const page = await store.inputItems(c.get('caller').orgId, id, pageOf(c));
    if (!page) throw notFound(id);
    return c.json({
      object: 'list',
      data: page.data,
      first_id: page.firstId,
      last_id: page.lastId,
      has_more: page.hasMore,
    });
  });
  return routes;
}
