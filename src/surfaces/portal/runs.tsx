import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { RunPage } from './runs-pages.js';
import type { PortalDeps } from './session.js';

/** What a run's page says after a change (`?done=`): fixed texts, never the query's. */
const DONE: Record<string, string> = { canceled: 'The run was asked to stop.' };

/**
 * A run (`/portal/runs/{id}`): its state, outputs and log (followed live by
 * the page's script through the API), and a cancel button.
 *
 * @example
 * portal.route('/runs', runsRoutes(deps));
 */
export function runsRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const runs = new Hono<GatewayEnv>();
  const { services } = deps;

  runs.get('/:id', async (c) => {
    const actor = await deps.signedIn(c);
    const run = await services.runs.get(actor, c.req.param('id'));
    const [{ cluster }, pieces] = await Promise.all([
      services.clusters.get(run.clusterId, null),
      services.runs.readLog(run.id),
    ]);
    const log = pieces.map((piece) => piece.data).join('');
    return c.html(
      <RunPage
        viewer={deps.viewerOf(actor)}
        run={run}
        clusterName={cluster.name}
        log={log}
        notice={DONE[c.req.query('done') ?? '']}
      />,
    );
  });

  runs.post('/:id/cancel', async (c) => {
    const actor = await deps.signedIn(c);
    deps.checkToken(actor, (await c.req.parseBody())._csrf);
    const run = await services.runs.cancel(actor, c.req.param('id'), services.runWorker);
    return c.redirect(`/portal/runs/${run.id}?done=canceled`, 303);
  });
  return runs;
}
