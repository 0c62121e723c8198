import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { SignedInActor } from '../context.js';
import { managedEngineOf } from '../admin/engines.js';
import { scaleEngineBody } from '../admin/schemas.js';
import { OperatorEnginesPage } from './operator-engines-pages.js';
import { operatorOnly } from './operator-orgs.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const DONE: Record<string, string> = {
  scaled: 'Scaled: replicas start or drain until the engine has the count asked for.',
  restarted: 'Restarting: each replica is replaced in turn, and the engine keeps serving.',
};

interface Extra {
  notice?: string;
  error?: string;
  /** The engine a refused form was for, and what was typed in it. */
  model?: string;
  replicas?: string;
  status?: number;
}

/**
 * Engines for platform admins (`/portal/operator/engines`): every engine and
 * its replicas from the fleet, what `GET /admin/v1/engines` answers, and for
 * each engine the gateway runs (Docker) a scale form and a rolling restart,
 * through the same engine lookup and validation as `POST
 * /admin/v1/engines/{model}/scale` and `/restart` (`tollgate engines scale`,
 * `restart`). 404 for anyone else.
 *
 * @example
 * portal.route('/operator/engines', operatorEnginesRoutes(deps, session));
 */
export function operatorEnginesRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const engines = new Hono<GatewayEnv>();
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));
  const render = (c: PortalContext, actor: SignedInActor, extra: Extra = {}) => {
    const managed = new Set(
      deps.fleet
        .engines()
        .filter((engine) => typeof engine.scale === 'function' && typeof engine.restart === 'function')
        .map((engine) => engine.modelId),
    );
    const page = (
      <OperatorEnginesPage
        viewer={session.viewerOf(actor)}
        engines={deps.fleet.status()}
        managed={managed}
        notice={extra.notice}
        error={extra.error}
        form={extra}
      />
    );
    return c.html(page, (extra.status ?? 200) as 200);
  };

  engines.get('/', async (c) => render(c, await operator(c), { notice: DONE[c.req.query('done') ?? ''] }));

  engines.post('/scale', async (c) => {
    const actor = await operator(c);
    const { model, text } = await readEngineForm(c, deps, session, actor);
    const replicas = text('replicas');
    const parsed = scaleEngineBody.safeParse({ replicas: /^\d{1,6}$/.test(replicas) ? Number(replicas) : replicas });
    if (!parsed.success) return render(c, actor, { error: problems(parsed.error), model, replicas, status: 400 });
    try {
      await managedEngineOf(deps, model).scale(parsed.data.replicas);
    } catch (error) {
      if (error instanceof GatewayError)
        return render(c, actor, { error: error.message, model, replicas, status: error.status });
      throw error;
    }
    deps.log.info('operator scaled an engine in the portal', {
      requestId: c.get('requestId'),
      model,
      replicas: parsed.data.replicas,
      by: actor.userId,
    });
    return c.redirect('/portal/operator/engines?done=scaled', 303);
  });

  engines.post('/restart', async (c) => {
    const actor = await operator(c);
    const { model } = await readEngineForm(c, deps, session, actor);
    try {
      await managedEngineOf(deps, model).restart();
    } catch (error) {
      if (error instanceof GatewayError) return render(c, actor, { error: error.message, model, status: error.status });
      throw error;
    }
    deps.log.info('operator restarted an engine in the portal', {
      requestId: c.get('requestId'),
      model,
      by: actor.userId,
    });
    return c.redirect('/portal/operator/engines?done=restarted', 303);
  });
  return engines;
}

/** An engine form's model and fields as text, its token checked. */
async function readEngineForm(c: PortalContext, deps: PortalDeps, session: PortalSession, actor: SignedInActor) {
  const body = await c.req.parseBody();
  session.checkToken(actor, body._csrf);
  const text = (name: string) => (typeof body[name] === 'string' ? body[name].trim() : '');
  return { model: text('model'), text };
}
