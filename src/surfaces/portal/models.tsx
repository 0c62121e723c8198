import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { ModelsPage } from './models-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

/**
 * The models (`/portal/models`): each with its price and a first request to copy.
 *
 * @example
 * portal.route('/models', modelsRoutes(deps, session));
 */
export function modelsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const models = new Hono<GatewayEnv>();
  models.get('/', async (c) => {
    const actor = await session.signedIn(c);
    const priced = await deps.catalog.listPriced();
    const wanted = c.req.query('model');
    const chosen = priced.find(({ model }) => model.id === wanted)?.model ?? null;
    const baseUrl = deps.config.publicUrl ?? new URL(c.req.url).origin;
    return c.html(
      <ModelsPage
        viewer={session.viewerOf(actor)}
        models={priced}
        chosen={chosen}
        baseUrl={baseUrl}
        currency={deps.config.currency}
      />,
    );
  });
  return models;
}
