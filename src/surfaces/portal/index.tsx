import { createHash } from 'node:crypto';
import { type ErrorHandler, Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES } from '../../shared/http/request.js';
import { refuseNul } from '../../shared/http/refuse-nul.js';
import { DEFAULT_PACKAGE_LIMITS } from '../../platform/stacks/package.js';
import type { PortalDeps } from './deps.js';
import type { ClientOf } from '../api/resource.js';
import { inUploadSlot } from '../api/upload-slot.js';
import { assetAt } from './assets.js';
import { stackIconAt } from './stack-icons.js';
import { clustersRoutes } from './clusters.js';
import { costsRoutes } from './costs.js';
import { ErrorPage, SignInOrErrorPage } from './error-pages.js';
import { keysRoutes } from './keys.js';
import { budgetsRoutes } from './budgets.js';
import { modelsRoutes } from './models.js';
import { operatorEnginesRoutes } from './operator-engines.js';
import { operatorFairShareRoutes } from './operator-fair-share.js';
import { operatorModelsRoutes } from './operator-models.js';
import { operatorNodesRoutes } from './operator-nodes.js';
import { operatorOrgsRoutes } from './operator-orgs.js';
import { operatorRateCardsRoutes } from './operator-rate-cards.js';
import { operatorRatesRoutes } from './operator-rates.js';
import { overviewRoutes } from './overview.js';
import { projectsRoutes } from './projects.js';
import { runsRoutes } from './runs.js';
import { formTokens, sameOrigin, securityHeaders } from './security.js';
import { pageTurns } from './page-turns.js';
import { type PortalSession, sessionActor, signedIn } from './session.js';
import { signInRoutes, signOutRoutes } from './sign-in.js';
import { STACK_UPLOAD_PATH, stacksRoutes } from './stacks.js';
import { usageRoutes } from './usage.js';
import { usersRoutes } from './users.js';
import { walletRoutes } from './wallet.js';
import { batchesRoutes } from './batches.js';

/**
 * The portal: server-rendered pages (Hono's JSX) under `/portal`, for the
 * people of an organization. Signed in with the session cookie of
 * `surfaces/auth/index.ts`; every form posts with a token of its session and
 * is refused from another origin; every page carries the security headers of
 * `security.ts`. Each resource is a file of this folder mounted here; the
 * page markup is in the `*-pages.tsx` files.
 *
 * @example
 * app.route('/portal', createPortalRoutes(services, clientOf));
 */
export function createPortalRoutes(deps: PortalDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const portal = new Hono<GatewayEnv>();
  const tokens = formTokens(createHash('sha256').update(`tollgate-portal:${deps.adminToken}`).digest('hex'));
  const session: PortalSession = {
    // `pageTurns` has read a page's session already.
    signedIn: async (c) => c.get('actor') ?? signedIn(deps, c, clientOf(c).https),
    viewerOf: (actor: SignedInActor) => ({
      name: actor.user.name,
      csrf: tokens.of(actor.sessionHash!),
      operator: actor.platformAdmin,
    }),
    checkToken: (actor, token) => tokens.check(actor.sessionHash!, token),
  };

  const formLimit = limitBody(MANAGEMENT_MAX_BODY_BYTES, deps.config.oversizeDrain);
  // Room for the largest package and its multipart framing on the upload form; the other forms are
  // small. Only a signed-in user's upload is read, in one of the process's upload slots (taken
  // before the body is read).
  const uploadLimit = limitBody(DEFAULT_PACKAGE_LIMITS.maxZipBytes + 64 * 1024, deps.config.oversizeDrain);
  const upload = inUploadSlot(
    deps.uploads,
    deps.config.oversizeDrain,
    async (c) => (await session.signedIn(c)).userId,
    uploadLimit,
  );
  portal.use(
    '*',
    refuseNul(),
    securityHeaders(),
    (c, next) => (c.req.path === STACK_UPLOAD_PATH && c.req.method === 'POST' ? upload(c, next) : formLimit(c, next)),
    sameOrigin((c) => clientOf(c).https),
  );
  portal.onError(portalError(deps));
  // An organization's pages take turns, so its heavy views never hold another tenant's requests.
  portal.use(
    '*',
    pageTurns(deps.portalPages, (c) => sessionActor(deps, c, clientOf(c).https)),
  );

  portal.get('/assets/:file', (c) => {
    const asset = assetAt(c.req.param('file')) ?? stackIconAt(c.req.param('file'));
    if (!asset) throw new GatewayError('not_found', 'No such file.');
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
    });
  });

  portal.get('/', async (c) =>
    c.redirect((await sessionActor(deps, c, clientOf(c).https)) ? '/portal/overview' : '/portal/sign-in', 303),
  );
  portal.route('/sign-in', signInRoutes(deps, clientOf));
  portal.route('/sign-out', signOutRoutes(deps, session, clientOf));
  portal.route('/overview', overviewRoutes(deps, session));
  portal.route('/keys', keysRoutes(deps, session));
  portal.route('/budgets', budgetsRoutes(deps, session));
  portal.route('/', usageRoutes(deps, session));
  portal.route('/wallet', walletRoutes(deps, session));
  portal.route('/batches', batchesRoutes(deps, session));
  portal.route('/models', modelsRoutes(deps, session));
  portal.route('/projects', projectsRoutes(deps, session));
  portal.route('/users', usersRoutes(deps, session));
  portal.route('/stacks', stacksRoutes(deps, session));
  portal.route('/clusters', clustersRoutes(deps, session));
  portal.route('/runs', runsRoutes(deps, session));
  portal.route('/operator/orgs', operatorOrgsRoutes(deps, session));
  portal.route('/operator/models', operatorModelsRoutes(deps, session));
  portal.route('/operator/engines', operatorEnginesRoutes(deps, session));
  portal.route('/operator/fair-share', operatorFairShareRoutes(deps, session));
  portal.route('/operator/nodes', operatorNodesRoutes(deps, session));
  portal.route('/operator/rate-cards', operatorRateCardsRoutes(deps, session));
  portal.route('/operator/rates', operatorRatesRoutes(deps, session));
  portal.route('/', costsRoutes(deps, session));
  // Last: any other address under /portal is the portal's own "Not found" page (through onError),
  // not JSON.
  portal.all('*', () => {
    throw new GatewayError('not_found', 'There is no page at this address.');
  });
  return portal;
}

/**
 * The portal's error pages: sign-in for a 401, a page for a form from elsewhere (403) or too large
 * (413), and the error's own message and status for any other `GatewayError`; anything else is
 * logged and a 500 that says nothing more.
 */
function portalError(deps: Pick<PortalDeps, 'log'>): ErrorHandler<GatewayEnv> {
  return (error, c) => {
    if (error instanceof GatewayError && error.status === 401) return c.redirect('/portal/sign-in', 303);
    // `sameOrigin` refuses a form from elsewhere with this exception.
    if (error instanceof HTTPException && error.status === 403)
      return c.html(<ErrorPage status={403} message="This form did not come from this portal." />, 403);
    if (error instanceof HTTPException && error.status === 413)
      return c.html(<ErrorPage status={413} message="That form is too large." />, 413);
    const status = error instanceof GatewayError ? error.status : 500;
    if (!(error instanceof GatewayError))
      deps.log.error('portal request failed', {
        requestId: c.get('requestId'),
        path: c.req.path,
        error: error.name,
      });
    const message = error instanceof GatewayError ? error.message : 'Something went wrong. Try again.';
    // A busy upload's Retry-After, for one.
    if (error instanceof GatewayError)
      for (const [name, value] of Object.entries(error.headers ?? {})) c.header(name, value);
    return c.html(
      <SignInOrErrorPage status={status} message={message} signingIn={c.req.path === '/portal/sign-in'} />,
      status as 400,
    );
  };
}
