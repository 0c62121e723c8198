import { type Context, Hono } from 'hono';
import { conversationItemsOf } from '../../gateway/conversations/items.js';
import type { ConversationItemsQuery } from '../../gateway/conversations/store.js';
import { requireKey } from '../../gateway/requests/auth.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';
import { responsesRequestErrors } from '../../gateway/requests/responses/translate.js';
import { echoedId } from '../../gateway/stored-responses/ids.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { headerOf, readJsonObject } from '../../shared/http/request.js';
import type { V1Deps } from './deps.js';

type Json = Record<string, unknown>;

/** The most items one create or add takes, as OpenAI's spec caps them. */
const MAX_ITEMS_AT_A_TIME = 20;

/**
 * OpenAI's Conversations API: `POST /v1/conversations`, `GET`, `POST` (its
 * metadata) and `DELETE /v1/conversations/{id}`, and its items: `GET` (a page)
 * and `POST /v1/conversations/{id}/items`, `GET` and `DELETE …/items/{item_id}`.
 * Kept in `deps.conversationStore` per organization; each route counted against
 * the key's limits before its body or the store is read. An unknown, deleted,
 * expired or another organization's id is the same 404.
 *
 * @example
 * v1.route('/conversations', conversationRoutes(deps));
 */
export function conversationRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const guarded = [requireKey(deps.keys), admittedByKeyLimits(deps.gateKeeper)] as const;
  const store = deps.conversationStore;
  const org = (c: Context<GatewayEnv>) => c.get('caller').orgId;
  routes.post('/', ...guarded, async (c) => {
    const body = await bodyOf(c, deps, true);
    const metadata = body.metadata === undefined || body.metadata === null ? {} : metadataOf(body.metadata);
    const items = body.items === undefined || body.items === null ? [] : itemsOf(body.items, deps);
    return c.json(await store.create(org(c), metadata, items));
  });
  routes.get('/:id', ...guarded, async (c) => c.json(found(await store.get(org(c), c.req.param('id')), c)));
  routes.post('/:id', ...guarded, async (c) => {
    const body = await bodyOf(c, deps, false);
    const metadata = metadataOf(body.metadata);
    return c.json(found(await store.update(org(c), c.req.param('id'), metadata), c));
  });
  routes.delete('/:id', ...guarded, async (c) => {
    const id = c.req.param('id');
    if (!(await store.delete(org(c), id))) throw notFound('conversation', id);
    return c.json({ id, object: 'conversation.deleted', deleted: true });
  });
  routes.get('/:id/items', ...guarded, async (c) => {
    const page = found(await store.listItems(org(c), c.req.param('id'), pageOf(c)), c);
    return c.json({
      object: 'list',
      data: page.data,
      first_id: page.firstId,
      last_id: page.lastId,
      has_more: page.hasMore,
    });
  });
  routes.post('/:id/items', ...guarded, async (c) => {
    const body = await bodyOf(c, deps, false);
    const items = itemsOf(body.items, deps);
    const added = found(await store.addItems(org(c), c.req.param('id'), items), c);
    return c.json({
      object: 'list',
      data: added,
      first_id: added[0]?.id ?? null,
      last_id: added.at(-1)?.id ?? null,
      has_more: false,
    });
  });
  routes.get('/:id/items/:itemId', ...guarded, async (c) => {
    const item = await store.getItem(org(c), c.req.param('id'), c.req.param('itemId'));
    if (!item) throw notFound('item', c.req.param('itemId'));
    return c.json(item);
  });
  routes.delete('/:id/items/:itemId', ...guarded, async (c) => {
    const conversation = await store.deleteItem(org(c), c.req.param('id'), c.req.param('itemId'));
    if (!conversation) throw notFound('item', c.req.param('itemId'));
    return c.json(conversation);
  });
  return routes;
}

/** The JSON object sent; for a create, no body at all is an empty one (OpenAI's clients send none). */
async function bodyOf(c: Context<GatewayEnv>, deps: V1Deps, mayBeEmpty: boolean): Promise<Json> {
  if (mayBeEmpty && (headerOf(c, 'content-length') === '0' || c.req.raw.body === null)) return {};
  const { body } = await readJsonObject(
    c,
    deps.config.maxBodyBytes,
    deps.config.oversizeDrain,
    deps.config.maxJsonDepth,
  );
  return body;
}

/**
 * OpenAI's metadata: at most 16 pairs, keys of at most 64 characters, values strings of at most
 * 512.
 */
function metadataOf(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('metadata', 'must be an object of at most 16 string values');
  const entries = Object.entries(value as Json);
  if (entries.length > 16) throw invalid('metadata', 'must have at most 16 keys');
  for (const [key, text] of entries) {
    if (key.length > 64) throw invalid('metadata', 'keys must be at most 64 characters');
    if (typeof text !== 'string' || text.length > 512)
      throw invalid('metadata', 'values must be strings of at most 512 characters');
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/**
 * Items as `POST /v1/responses` takes them in `input` (checked the same way), at most 20, as a
 * conversation keeps them.
 */
function itemsOf(value: unknown, deps: V1Deps): Json[] {
  if (!Array.isArray(value)) throw invalid('items', 'must be an array of input items');
  if (value.length > MAX_ITEMS_AT_A_TIME) throw invalid('items', `must hold at most ${MAX_ITEMS_AT_A_TIME} items`);
  const details = responsesRequestErrors({ input: value }, deps.config.translation).map((detail) => ({
    ...detail,
    field: detail.field.replace(/^input/, 'items'),
  }));
  if (details.length > 0)
    throw new GatewayError('invalid_request', `${details[0]!.field} ${details[0]!.message}.`, { details });
  return conversationItemsOf(value as Json[]);
}

/**
 * `limit` (1-100, default 20), `order` (default desc) and `after` of an items list, as OpenAI reads
 * them.
 */
function pageOf(c: Context<GatewayEnv>): ConversationItemsQuery {
  const { limit = '20', order = 'desc', after } = c.req.query();
  if (!/^\d{1,3}$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
    throw invalid('limit', 'must be a whole number from 1 to 100');
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc');
  return { after, limit: Number(limit), order };
}

function found<T>(value: T | null, c: Context<GatewayEnv>): T {
  if (value === null) throw notFound('conversation', c.req.param('id') ?? '');
  return value;
}

/** The same answer whatever the reason: unknown, deleted, expired or another organization's. */
function notFound(what: 'conversation' | 'item', id: string): GatewayError {
  return new GatewayError('not_found', `No ${what} with id \`${echoedId(id)}\` was found.`);
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}
