import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { setPriceBody } from '../admin/schemas.js';
import { OperatorModelsPage } from './operator-models-pages.js';
import { operatorOnly } from './operator-orgs.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const DONE: Record<string, string> = {
  enabled: 'Enabled: clients can call it from their next request.',
  disabled: 'Disabled: requests naming it are refused from now on.',
  price: 'Price saved: it applies from the next request.',
};

/**
 * Models for platform admins (`/portal/operator/models`): the whole catalog,
 * disabled models included, with prices and the engine behind each; for a
 * chosen model (`?model=`) enable or disable it, set its prices, and see its
 * replicas. The same catalog service and validation (`admin/schemas.ts`) as
 * `PATCH /admin/v1/models/{id}` and `PUT /admin/v1/prices/{id}`. 404 for
 * anyone but a platform admin.
 *
 * @example
 * portal.route('/operator/models', operatorModelsRoutes(deps, session));
 */
export function operatorModelsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const models = new Hono<GatewayEnv>();
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));

  models.get('/', async (c) => {
    const actor = await operator(c);
    return render(c, deps, session, actor, c.req.query('model') ?? null, { notice: DONE[c.req.query('done') ?? ''] });
  });

  models.post('/enabled', async (c) => {
    const actor = await operator(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const id = typeof form.model === 'string' ? form.model : '';
    const enabled = form.enabled === 'true';
    await deps.catalog.update(id, { enabled });
    deps.log.info('operator changed a model in the portal', {
      requestId: c.get('requestId'),
      model: id,
      enabled,
      by: actor.userId,
    });
    return c.redirect(
      `/portal/operator/models?model=${encodeURIComponent(id)}&done=${enabled ? 'enabled' : 'disabled'}`,
      303,
    );
  });

  models.post('/price', async (c) => {
    const actor = await operator(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const id = typeof form.model === 'string' ? form.model : '';
    const text = (name: string) => (typeof form[name] === 'string' ? form[name] : '');
    const parsed = setPriceBody.safeParse({
      input_per_million: text('input_per_million'),
      // Left empty: the input price.
      cached_input_per_million: text('cached_input_per_million').trim() || null,
      output_per_million: text('output_per_million'),
      // Left empty: the input and the output price.
      batch_input_per_million: text('batch_input_per_million').trim() || null,
      batch_output_per_million: text('batch_output_per_million').trim() || null,
    });
    if (!parsed.success) return render(c, deps, session, actor, id, { error: problems(parsed.error), status: 400 });
    const price = parsed.data;
    await deps.catalog.setPrice(id, price.input_per_million, price.output_per_million, {
      cachedInputPerToken: price.cached_input_per_million ?? null,
      batchInputPerToken: price.batch_input_per_million ?? null,
      batchOutputPerToken: price.batch_output_per_million ?? null,
    });
    deps.log.info('operator set a price in the portal', {
      requestId: c.get('requestId'),
      model: id,
      by: actor.userId,
    });
    return c.redirect(`/portal/operator/models?model=${encodeURIComponent(id)}&done=price`, 303);
  });
  return models;
}

async function render(
  c: PortalContext,
  deps: PortalDeps,
  session: PortalSession,
  actor: SignedInActor,
  chosenId: string | null,
  extra: { notice?: string; error?: string; status?: 400 },
) {
  const [rows, prices] = await Promise.all([deps.catalog.list({ includeDisabled: true }), deps.catalog.listPrices()]);
  const chosen = chosenId === null ? null : (rows.find((row) => row.id === chosenId) ?? null);
  if (chosenId !== null && !chosen) throw new GatewayError('not_found', `Model ${chosenId} does not exist.`);
  return c.html(
    <OperatorModelsPage
      viewer={session.viewerOf(actor)}
      models={rows}
      prices={new Map(prices.map((price) => [price.modelId, price]))}
      engines={new Map(deps.fleet.status().map((engine) => [engine.model, engine]))}
      chosen={chosen}
      currency={deps.config.currency}
      notice={extra.notice}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}
