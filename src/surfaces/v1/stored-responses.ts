import { type Context, Hono } from 'hono';
import { requireKey } from '../../gateway/requests/auth.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';
import { streamFromStore } from '../../gateway/requests/responses/background-events.js';
import { echoedId } from '../../gateway/stored-responses/ids.js';
import type { InputItemsQuery } from '../../gateway/stored-responses/store.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { V1Deps } from './deps.js';

/**
 * The same answer for an id that is unknown, expired, deleted or another
 * organization's: nothing in it tells them apart. A long id is repeated only
 * in part (`echoedId`).
 */
function notFound(id: string): GatewayError {
  return new GatewayError('not_found', `No response with id \`${echoedId(id)}\` was found.`);
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}

/**
 * `limit`, `order`, `after` and `before` of `GET …/input_items`, as OpenAI reads them (limit 1-100,
 * default 20; order default desc; `before`, of OpenAI's earlier lists, the page just before an
 * item). The store checks the ids.
 */
function pageOf(c: Context<GatewayEnv>): InputItemsQuery {
  const { limit = '20', order = 'desc', after, before } = c.req.query();
  if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
    throw invalid('limit', 'must be a whole number from 1 to 100');
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc');
  return { after, before, limit: Number(limit), order };
}

/**
 * `starting_after` of a stream read again: the last `sequence_number` the client has (default:
 * none).
 */
function startingAfter(c: Context<GatewayEnv>): number {
  const after = c.req.query('starting_after');
  if (after === undefined) return -1;
  if (!/^\d{1,9}$/.test(after)) throw invalid('starting_after', 'must be a sequence number (a whole number)');
  return Number(after);
}

/**
 * `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}` and
 * `GET /v1/responses/{id}/input_items`: stored Responses read back and deleted
 * by a key of their organization (`gateway/stored-responses/store.ts`), each counted
 * against the key's limits before the store is read; a background response's
 * status as it runs, its kept events again (`stream=true&starting_after=N`), and
 * `POST /v1/responses/{id}/cancel` (`gateway/requests/responses/background.ts`). Created by
 * `POST /v1/responses`, in a file of its own.
 *
 * @example
 * v1.route('/responses', storedResponseRoutes(deps));
 */
export function storedResponseRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const auth = requireKey(deps.keys);
  const limits = admittedByKeyLimits(deps.gateKeeper);
  const store = deps.responseStore;
  const background = deps.backgroundResponses;
  routes.get('/:id', auth, limits, async (c) => {
    const id = c.req.param('id');
    const orgId = c.get('caller').orgId;
    const job = await background.store.get(orgId, id);
    if (c.req.query('stream') === 'true') {
      if (!job) {
        if (await store.get(orgId, id)) throw invalid('stream', 'is only for a background response made with stream');
        throw notFound(id);
      }
      if (!job.streamed) throw invalid('stream', 'is only for a background response made with stream');
      return streamFromStore(c, background.store, { orgId, id }, startingAfter(c));
    }
    // A background response's own row, until it is deleted: its status as it runs, then as it
    // ended.
    if (job) return c.json(JSON.parse(job.response) as unknown);
    const response = await store.get(orgId, id);
    if (!response) throw notFound(id);
    return c.json(response);
  });
  routes.post('/:id/cancel', auth, limits, async (c) => {
    const id = c.req.param('id');
    const orgId = c.get('caller').orgId;
    const response = await background.cancel(orgId, id);
    if (response) return c.json(response);
    if (await store.get(orgId, id))
      throw invalid('response_id', 'is not a background response: only those are cancelled');
    throw notFound(id);
  });
  routes.delete('/:id', auth, limits, async (c) => {
    const id = c.req.param('id');
    const orgId = c.get('caller').orgId;
    // A running one is stopped first (billed what it generated), so nothing of it is kept after.
    const running = await background.store.get(orgId, id);
    if (running?.status === 'queued' || running?.status === 'in_progress') await background.cancel(orgId, id);
    const job = await background.store.delete(orgId, id);
    if (!(await store.delete(orgId, id)) && !job) throw notFound(id);
    return c.json({ id, object: 'response', deleted: true });
  });
  routes.get('/:id/input_items', auth, limits, async (c) => {
    const id = c.req.param('id');
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
