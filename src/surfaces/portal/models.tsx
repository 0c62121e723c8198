import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { ModelsPage } from './models-pages.js';
import type { PortalDeps } from './session.js';

/**
 * The models (`/portal/models`): each with its price and a first request to copy.
 *
 * @example
 * portal.route('/models', modelsRoutes(deps));
 */
export function modelsRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const models = new Hono<GatewayEnv>();
  const { services } = deps;
  models.get('/', async (c) => {
    const actor = await deps.signedIn(c);
    const priced = await services.catalog.listPriced();
    const wanted = c.req.query('model');
    const chosen = priced.find(({ model }) => model.id === wanted)?.model ?? null;
    const baseUrl = services.config.publicUrl ?? new URL(c.req.url).origin;
    return c.html(
      <ModelsPage
        viewer={deps.viewerOf(actor)}
        models={priced}
        chosen={chosen}
        baseUrl={baseUrl}
        currency={services.config.currency}
      />,
    );
  });
  return models;
}
