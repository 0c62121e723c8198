import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { RunPage } from './runs-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

/** What a run's page says after a change (`?done=`): fixed texts, never the query's. */
const DONE: Record<string, string> = { canceled: 'The run was asked to stop.' };

/**
 * A run (`/portal/runs/{id}`): its state, outputs and log (followed live by
 * the page's script through the API), and a cancel button.
 *
 * @example
 * portal.route('/runs', runsRoutes(deps, session));
 */
export function runsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const runs = new Hono<GatewayEnv>();

  runs.get('/:id', async (c) => {
    const actor = await session.signedIn(c);
    const run = await deps.runs.get(actor, c.req.param('id'));
    const [{ cluster }, pieces] = await Promise.all([
      deps.clusters.get(run.clusterId, null),
      deps.runs.readLog(run.id),
    ]);
    const log = pieces.map((piece) => piece.data).join('');
    return c.html(
      <RunPage
        viewer={session.viewerOf(actor)}
        run={run}
        clusterName={cluster.name}
        log={log}
        notice={DONE[c.req.query('done') ?? '']}
      />,
    );
  });

  runs.post('/:id/cancel', async (c) => {
    const actor = await session.signedIn(c);
    session.checkToken(actor, (await c.req.parseBody())._csrf);
    const run = await deps.runs.cancel(actor, c.req.param('id'), deps.runWorker);
    return c.redirect(`/portal/runs/${run.id}?done=canceled`, 303);
  });
  return runs;
}
