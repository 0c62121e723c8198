import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';
import { type Context, Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import { ANONYMOUS_HOURLY_LIMIT, countAgainst, SESSION_COOKIE } from '../api/access.js';
import { formatAmount } from '../billing/money.js';
import { decodeCursor, encodeCursor, keysLastUsed, type UsageCursor, usageGroups, usageRequests, usageTotals } from '../billing/reports.js';
import { PROJECT_VISIBILITIES, ROLES } from '../db/schema.js';
import type { GatewayEnv, SignedInActor } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { describeError } from '../http/log.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES } from '../http/request.js';
import { toDetails } from '../http/validate.js';
import { KEY_EXPIRIES, type KeyRow } from '../keys/service.js';
import { PASSWORD_MAX, PASSWORD_MIN } from '../people/passwords.js';
import { assertCanCreate, assertCanDelete, assertCanUpdate, canManageProject, canSeeProject } from '../people/permissions.js';
import { checkSignIn, endSession, startSession } from '../people/routes.js';
import { ProjectService } from '../platform/projects.js';
import { DEFAULT_PACKAGE_LIMITS } from '../stacks/package.js';
import type { Services } from '../services.js';
import { ModelsPage, WalletPage } from './account-pages.js';
import { assetAt } from './assets.js';
import { KeyCreatedPage, KeyDeletePage, KeyEditPage, KeysPage, SignInPage, type Viewer } from './pages.js';
import { ProjectsPage, UsersPage } from './people-pages.js';
import { formTokens, sameOrigin, securityHeaders } from './security.js';
import { UsagePage, type UsageWindow } from './usage-page.js';
import { registerCostPages } from './costs-routes.js';
import { registerPlatformPages, STACK_UPLOAD_PATH } from './platform-routes.js';

type PortalContext = Context<GatewayEnv>;

/** What the keys page says after a change redirected to it (`?done=`): fixed texts, never the query's. */
const DONE_NOTICES: Record<string, string> = {
  saved: 'Saved: the new limits and options apply from the key\'s next request.',
  deleted: 'Deleted: requests with that key are refused from now on.',
  'project-added': 'Project added.',
  'project-deleted': 'Project deleted: X-Project-ID no longer names it.',
  'user-added': 'User added: they can sign in now.',
  'role-saved': 'Role saved.',
  'user-deleted': 'User deleted: their sessions ended and their keys stopped working.',
};

const whole = (max: number) => z.coerce.number().int('Must be a whole number.').min(1, 'Must be at least 1.').max(max, `Must be at most ${max}.`);
/** An empty field means unlimited. */
const optionalWhole = (max: number) => z.preprocess((value) => (value === '' || value === undefined ? null : value), whole(max).nullable());
const keySettingsForm = z.object({
  requests_per_minute: whole(1_000_000),
  max_concurrency: whole(1_000_000),
  tokens_per_minute: optionalWhole(2_147_483_647),
  monthly_tokens: optionalWhole(Number.MAX_SAFE_INTEGER),
  store_request_data: z.literal('on').optional(),
  response_cache: z.literal('on').optional(),
});
const projectForm = z.object({
  name: z.string().trim().min(1, 'Give the project a name.').max(200),
  description: z.string().max(2000).optional(),
  visibility: z.enum(PROJECT_VISIBILITIES).optional(),
});
const userForm = z.object({
  name: z.string().trim().min(1, 'Give a name.').max(200),
  email: z.string().trim().max(254).pipe(z.email('Must be an email address.')),
  password: z.string().min(PASSWORD_MIN, `Must be at least ${PASSWORD_MIN} characters.`).max(PASSWORD_MAX, `Must be at most ${PASSWORD_MAX} characters.`),
  role: z.enum(ROLES),
});
const createKeyForm = keySettingsForm.extend({ name: z.string().trim().min(1, 'Give the key a name.').max(200), expiry: z.enum(KEY_EXPIRIES) });

/**
 * The portal: server-rendered pages (Hono's JSX) under `/portal`, for the
 * people of an organization. Signed in with the session cookie of
 * `people/routes.ts`; every form posts with a token of its session and is
 * refused from another origin; every page carries the security headers of
 * `security.ts`. Owners and admins manage every key of their organization;
 * members their own.
 *
 * @example
 * app.route('/portal', createPortalRoutes(services, clientOf));
 */
export function createPortalRoutes(services: Services, clientOf: (c: Context) => { address: string; https: boolean }): Hono<GatewayEnv> {
  const portal = new Hono<GatewayEnv>();
  const tokens = formTokens(createHash('sha256').update(`tollgate-portal:${services.adminToken}`).digest('hex'));
  const viewerOf = (actor: SignedInActor): Viewer => ({ name: actor.user.name, csrf: tokens.of(actor.sessionHash!) });
  const projects = new ProjectService(services.db, () => services.admissionCache.invalidate());

  const formLimit = limitBody(MANAGEMENT_MAX_BODY_BYTES);
  // Room for the largest package and its multipart framing on the upload form; the other forms are small.
  const uploadLimit = limitBody(DEFAULT_PACKAGE_LIMITS.maxZipBytes + 64 * 1024);
  portal.use('*', securityHeaders(), (c, next) => (c.req.path === STACK_UPLOAD_PATH ? uploadLimit(c, next) : formLimit(c, next)), sameOrigin((c) => clientOf(c).https));
  portal.onError((error, c) => {
    if (error instanceof GatewayError && error.status === 401) return c.redirect('/portal/sign-in', 303);
    // Hono's csrf middleware refuses a form from elsewhere with its own exception.
    if (error instanceof HTTPException && error.status === 403) return c.html(<ErrorPage status={403} message="This form did not come from this portal." />, 403);
    if (error instanceof HTTPException && error.status === 413) return c.html(<ErrorPage status={413} message="That form is too large." />, 413);
    const status = error instanceof GatewayError ? error.status : 500;
    if (!(error instanceof GatewayError)) services.log.error('portal request failed', { requestId: c.get('requestId'), path: c.req.path, error: (error as Error).name });
    const message = error instanceof GatewayError ? error.message : 'Something went wrong. Try again.';
    return c.html(<SignInOrErrorPage status={status} message={message} />, status as 400);
  });

  portal.get('/assets/:file', (c) => {
    const asset = assetAt(c.req.param('file'));
    if (!asset) throw new GatewayError('not_found', 'No such file.');
    return c.body(asset.body, 200, { 'content-type': asset.type, 'cache-control': 'public, max-age=31536000, immutable' });
  });

  portal.get('/', async (c) => c.redirect((await sessionActor(services, c)) ? '/portal/keys' : '/portal/sign-in', 303));

  portal.get('/sign-in', (c) => c.html(<SignInPage />));
  portal.post('/sign-in', async (c) => {
    const client = clientOf(c);
    await countAgainst(services, c, `api:addr:${client.address}`, ANONYMOUS_HOURLY_LIMIT);
    const form = await c.req.parseBody();
    const email = typeof form.email === 'string' ? form.email.trim().slice(0, 254) : '';
    const password = typeof form.password === 'string' ? form.password : '';
    // No password is longer: refused before any hashing (never cut to length, which would let a longer one in).
    if (password.length > PASSWORD_MAX) return c.html(<SignInPage error={`Passwords are at most ${PASSWORD_MAX} characters.`} email={email} />, 400);
    try {
      const user = await checkSignIn(services, email, password, client.address);
      await startSession(c, services, user.id, client.https);
      return c.redirect('/portal/keys', 303);
    } catch (error) {
      if (!(error instanceof GatewayError) || (error.status !== 401 && error.status !== 429)) throw error;
      return c.html(<SignInPage error={error.message} email={email} />, error.status as 401);
    }
  });

  portal.post('/sign-out', async (c) => {
    const actor = await signedIn(services, c);
    tokens.check(actor.sessionHash!, (await c.req.parseBody())._csrf);
    await endSession(c, services, clientOf(c).https);
    return c.redirect('/portal/sign-in', 303);
  });

  portal.get('/keys', async (c) => {
    const actor = await signedIn(services, c);
    const notice = DONE_NOTICES[c.req.query('done') ?? ''];
    return c.html(<KeysPage viewer={viewerOf(actor)} keys={await manageableKeys(services, actor)} lastUsed={await keysLastUsed(services.db, actor.orgId)} notice={notice} />);
  });

  portal.post('/keys', async (c) => {
    const actor = await signedIn(services, c);
    const form = await c.req.parseBody();
    tokens.check(actor.sessionHash!, form._csrf);
    const parsed = createKeyForm.safeParse(form);
    const again = async (error: string, status: 400 | 409) => c.html(<KeysPage viewer={viewerOf(actor)} keys={await manageableKeys(services, actor)} lastUsed={await keysLastUsed(services.db, actor.orgId)} error={error} />, status);
    if (!parsed.success) return again(problems(parsed.error), 400);
    try {
      const { key, secret } = await services.keys.create({ orgId: actor.orgId, userId: actor.userId, name: parsed.data.name, expiry: parsed.data.expiry, ...settingsOf(parsed.data) });
      c.header('Cache-Control', 'no-store');
      return c.html(<KeyCreatedPage viewer={viewerOf(actor)} apiKey={key} secret={secret} />, 201);
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'key_limit_reached') return again(error.message, 409);
      throw error;
    }
  });

  portal.get('/keys/:id/edit', async (c) => {
    const actor = await signedIn(services, c);
    return c.html(<KeyEditPage viewer={viewerOf(actor)} apiKey={await manageableKey(services, actor, c.req.param('id'))} />);
  });

  portal.post('/keys/:id', async (c) => {
    const actor = await signedIn(services, c);
    const key = await manageableKey(services, actor, c.req.param('id'));
    const form = await c.req.parseBody();
    tokens.check(actor.sessionHash!, form._csrf);
    const parsed = keySettingsForm.safeParse(form);
    if (!parsed.success) return c.html(<KeyEditPage viewer={viewerOf(actor)} apiKey={key} error={problems(parsed.error)} />, 400);
    await services.keys.update(key.id, settingsOf(parsed.data));
    // Post, then redirect: reloading the page does not post again.
    return c.redirect('/portal/keys?done=saved', 303);
  });

  portal.get('/keys/:id/delete', async (c) => {
    const actor = await signedIn(services, c);
    return c.html(<KeyDeletePage viewer={viewerOf(actor)} apiKey={await manageableKey(services, actor, c.req.param('id'))} />);
  });

  portal.post('/keys/:id/delete', async (c) => {
    const actor = await signedIn(services, c);
    const key = await manageableKey(services, actor, c.req.param('id'));
    tokens.check(actor.sessionHash!, (await c.req.parseBody())._csrf);
    await services.keys.revoke(key.id);
    return c.redirect('/portal/keys?done=deleted', 303);
  });

  portal.get('/usage', async (c) => {
    const actor = await signedIn(services, c);
    // What the page shows includes this process's latest charges (they reach the database just after each answer).
    await services.applier.settled(2_000);
    const { window, error } = usageWindow(c.req.query());
    const scope = { orgId: actor.orgId, from: window.from, to: window.to };
    const after = decodeCursor(c.req.query('after') ?? '') ?? undefined;
    const [totals, days, byKey, byModel, byProject, page, keys, projectRows] = await Promise.all([
      usageTotals(services.db, scope),
      usageGroups(services.db, scope, 'day'),
      usageGroups(services.db, scope, 'key'),
      usageGroups(services.db, scope, 'model'),
      usageGroups(services.db, scope, 'project'),
      usageRequests(services.db, { ...scope, limit: 50, after }),
      services.keys.list(actor.orgId),
      projects.list(actor, { offset: 0, limit: 100, sort: 'name' }),
    ]);
    return c.html(
      <UsagePage
        viewer={viewerOf(actor)}
        window={window}
        error={error}
        totals={totals}
        days={days}
        byKey={byKey}
        byModel={byModel}
        byProject={byProject}
        records={page.records}
        keyNames={new Map(keys.map((k) => [k.id, k.name]))}
        projectNames={new Map(projectRows.rows.map((p) => [p.id, p.name]))}
        olderHref={page.next ? `/portal/usage?${window.query}&after=${encodeCursor(page.next)}` : null}
        currency={services.config.currency}
      />,
    );
  });

  portal.get('/usage.csv', async (c) => {
    const actor = await signedIn(services, c);
    await services.applier.settled(2_000);
    const { window } = usageWindow(c.req.query());
    const keyNames = new Map((await services.keys.list(actor.orgId)).map((k) => [k.id, k.name]));
    const scope = { orgId: actor.orgId, from: window.from, to: window.to };
    const currency = services.config.currency;
    const csv = stringify({ header: true, columns: ['time_utc', 'request_id', 'key_id', 'key_name', 'project_id', 'model', 'endpoint', 'status', 'prompt_tokens', 'completion_tokens', 'cost', 'currency', 'cache_hit'] });
    // Written page by page as the database gives them: a long window is never held whole in memory.
    void (async () => {
      try {
        let after: UsageCursor | undefined;
        do {
          const page = await usageRequests(services.db, { ...scope, limit: 1_000, after });
          for (const r of page.records) {
            const row = [r.createdAt.toISOString(), r.id, r.keyId, keyNames.get(r.keyId) ?? '', r.projectId ?? '', r.modelId, r.endpoint, r.status, r.promptTokens, r.completionTokens, formatAmount(r.cost), currency, r.cacheHit];
            if (!csv.write(row)) await new Promise((resolve) => csv.once('drain', resolve));
          }
          after = page.next ?? undefined;
        } while (after);
        csv.end();
      } catch (error) {
        services.log.error('usage CSV failed', { requestId: c.get('requestId'), ...describeError(error) });
        csv.destroy(error as Error);
      }
    })();
    const name = `tollgate-usage-${window.from.toISOString().slice(0, 10)}-to-${new Date(window.to.getTime() - 86_400_000).toISOString().slice(0, 10)}.csv`;
    return c.body(Readable.toWeb(csv) as ReadableStream, 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${name}"` });
  });

  portal.get('/wallet', async (c) => {
    const actor = await signedIn(services, c);
    await services.applier.settled(2_000);
    const [balance, ledger, state] = await Promise.all([
      services.wallets.balance(actor.orgId),
      services.wallets.ledger(actor.orgId, 100),
      services.admissions.gate.walletState(actor.orgId),
    ]);
    const held = state.holds.reduce((sum, hold) => sum + hold.amount, 0n);
    return c.html(<WalletPage viewer={viewerOf(actor)} balance={balance} held={held} ledger={ledger} currency={services.config.currency} />);
  });

  portal.get('/models', async (c) => {
    const actor = await signedIn(services, c);
    const models = await services.catalog.listPriced();
    const wanted = c.req.query('model');
    const chosen = models.find(({ model }) => model.id === wanted)?.model ?? null;
    const baseUrl = services.config.publicUrl ?? new URL(c.req.url).origin;
    return c.html(<ModelsPage viewer={viewerOf(actor)} models={models} chosen={chosen} baseUrl={baseUrl} currency={services.config.currency} />);
  });

  const projectsPage = async (c: PortalContext, actor: SignedInActor, extra: { error?: string; notice?: string } = {}, status: 200 | 400 = 200) => {
    const { rows } = await projects.list(actor, { offset: 0, limit: 100, sort: 'name' });
    return c.html(<ProjectsPage viewer={viewerOf(actor)} actor={actor} projects={rows} {...extra} />, status);
  };

  portal.get('/projects', async (c) => {
    const actor = await signedIn(services, c);
    return projectsPage(c, actor, { notice: DONE_NOTICES[c.req.query('done') ?? ''] });
  });

  portal.post('/projects', async (c) => {
    const actor = await signedIn(services, c);
    const form = await c.req.parseBody();
    tokens.check(actor.sessionHash!, form._csrf);
    const parsed = projectForm.safeParse(form);
    if (!parsed.success) return projectsPage(c, actor, { error: problems(parsed.error) }, 400);
    await projects.create(actor, parsed.data);
    return c.redirect('/portal/projects?done=project-added', 303);
  });

  portal.post('/projects/:id/delete', async (c) => {
    const actor = await signedIn(services, c);
    tokens.check(actor.sessionHash!, (await c.req.parseBody())._csrf);
    const project = await projects.get(c.req.param('id'));
    if (!canSeeProject(actor, project)) throw new GatewayError('not_found', 'There is no such project.');
    if (!canManageProject(actor, project)) throw new GatewayError('forbidden', 'Only the project\'s creator, owners and admins delete it.');
    await projects.delete(project.id);
    return c.redirect('/portal/projects?done=project-deleted', 303);
  });

  const usersPage = async (c: PortalContext, actor: SignedInActor, extra: { error?: string; notice?: string } = {}, status: 200 | 400 | 403 | 409 = 200) => {
    const { rows } = await services.users.list(actor.orgId, { offset: 0, limit: 100, sort: 'name' });
    return c.html(<UsersPage viewer={viewerOf(actor)} actor={actor} users={rows} {...extra} />, status);
  };
  /**
   * Makes a change to users and goes back to the page saying `done`; a rule
   * of `people/permissions.ts` or of the user service that refuses it (403,
   * 409) is shown on the page instead.
   */
  const changeUsers = async (c: PortalContext, actor: SignedInActor, change: () => Promise<unknown>, done: string) => {
    try {
      await change();
    } catch (error) {
      if (!(error instanceof GatewayError) || (error.status !== 403 && error.status !== 409)) throw error;
      return usersPage(c, actor, { error: error.message }, error.status as 403);
    }
    return c.redirect(`/portal/users?done=${done}`, 303);
  };

  portal.get('/users', async (c) => {
    const actor = await signedIn(services, c);
    return usersPage(c, actor, { notice: DONE_NOTICES[c.req.query('done') ?? ''] });
  });

  portal.post('/users', async (c) => {
    const actor = await signedIn(services, c);
    const form = await c.req.parseBody();
    tokens.check(actor.sessionHash!, form._csrf);
    const parsed = userForm.safeParse(form);
    if (!parsed.success) return usersPage(c, actor, { error: problems(parsed.error) }, 400);
    return changeUsers(c, actor, async () => {
      assertCanCreate(actor, actor.orgId, parsed.data.role);
      await services.users.create({ orgId: actor.orgId, ...parsed.data });
    }, 'user-added');
  });

  portal.post('/users/:id/role', async (c) => {
    const actor = await signedIn(services, c);
    const form = await c.req.parseBody();
    tokens.check(actor.sessionHash!, form._csrf);
    const role = z.enum(ROLES).safeParse(form.role);
    if (!role.success) return usersPage(c, actor, { error: 'Choose a role: owner, admin or member.' }, 400);
    const subject = await services.users.get(c.req.param('id'));
    return changeUsers(c, actor, async () => {
      assertCanUpdate(actor, subject, { role: role.data });
      await services.users.update(subject.id, { role: role.data });
    }, 'role-saved');
  });

  portal.post('/users/:id/delete', async (c) => {
    const actor = await signedIn(services, c);
    tokens.check(actor.sessionHash!, (await c.req.parseBody())._csrf);
    const subject = await services.users.get(c.req.param('id'));
    return changeUsers(c, actor, async () => {
      assertCanDelete(actor, subject);
      await services.users.delete(subject.id);
    }, 'user-deleted');
  });

  registerPlatformPages(portal, { services, signedIn: (c) => signedIn(services, c), viewerOf, checkToken: (actor, token) => tokens.check(actor.sessionHash!, token) });
  registerCostPages(portal, { services, signedIn: (c) => signedIn(services, c), viewerOf, checkToken: (actor, token) => tokens.check(actor.sessionHash!, token) });

  return portal;
}

/**
 * The window of a usage page or CSV, from its query: `window=this-month`
 * (default) or `last-month`, or `custom` with `from` and `to` as UTC dates,
 * `to` included, at most 366 days. A bad custom window falls back to this
 * month, with the reason.
 */
function usageWindow(query: Record<string, string>): { window: UsageWindow; error?: string } {
  const now = new Date();
  const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  if (query.window === 'last-month') return { window: { kind: 'last-month', from: month(-1), to: month(0), query: 'window=last-month' } };
  const thisMonth: UsageWindow = { kind: 'this-month', from: month(0), to: month(1), query: 'window=this-month' };
  if (query.window !== 'custom') return { window: thisMonth };
  const dateOf = (text: string | undefined) => (text && /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`)) ? new Date(`${text}T00:00:00Z`) : null);
  const from = dateOf(query.from);
  const last = dateOf(query.to);
  if (!from || !last) return { window: thisMonth, error: 'Give both dates as YYYY-MM-DD. Showing this month.' };
  const to = new Date(last.getTime() + 86_400_000);
  if (to <= from) return { window: thisMonth, error: 'The window must end on or after its first day. Showing this month.' };
  if (to.getTime() - from.getTime() > 366 * 86_400_000) return { window: thisMonth, error: 'A window is at most 366 days. Showing this month.' };
  const query_ = `window=custom&from=${query.from}&to=${query.to}`;
  return { window: { kind: 'custom', from, to, query: query_ } };
}

function SignInOrErrorPage({ status, message }: { status: number; message: string }) {
  return status === 429 ? <SignInPage error={message} /> : <ErrorPage status={status} message={message} />;
}

function ErrorPage({ status, message }: { status: number; message: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`Error ${status} · Tollgate`}</title>
      </head>
      <body>
        <main>
          <h1>{status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Something went wrong'}</h1>
          <p>{message}</p>
          <p>
            <a href="/portal">Back to the portal</a>
          </p>
        </main>
      </body>
    </html>
  );
}

/** The signed-in user of the session cookie, or undefined. */
async function sessionActor(services: Services, c: PortalContext): Promise<SignedInActor | undefined> {
  const id = getCookie(c, SESSION_COOKIE);
  if (!id) return undefined;
  const session = await services.sessions.user(id);
  if (!session) return undefined;
  const { user } = session;
  return { userId: user.id, orgId: user.orgId, role: user.role, platformAdmin: user.platformAdmin, user, sessionHash: session.sessionHash };
}

/** The signed-in user, or 401 (which the portal answers with the sign-in page). */
async function signedIn(services: Services, c: PortalContext): Promise<SignedInActor> {
  const actor = await sessionActor(services, c);
  if (!actor) throw new GatewayError('unauthorized', 'Sign in first.');
  return actor;
}

/** Owners and admins manage every key of their organization; members the keys that act as them. */
async function manageableKeys(services: Services, actor: SignedInActor): Promise<KeyRow[]> {
  const keys = await services.keys.list(actor.orgId);
  return actor.role === 'member' && !actor.platformAdmin ? keys.filter((key) => key.userId === actor.userId) : keys;
}

async function manageableKey(services: Services, actor: SignedInActor, id: string): Promise<KeyRow> {
  const key = (await manageableKeys(services, actor)).find((k) => k.id === id);
  if (!key) throw new GatewayError('not_found', 'There is no such key among yours.');
  return key;
}

function settingsOf(form: z.output<typeof keySettingsForm>) {
  return {
    requestsPerMinute: form.requests_per_minute,
    maxConcurrency: form.max_concurrency,
    tokensPerMinute: form.tokens_per_minute,
    monthlyTokens: form.monthly_tokens,
    storeRequestData: form.store_request_data === 'on',
    responseCache: form.response_cache === 'on',
  };
}

/** Every problem of a form, in one sentence per field. */
function problems(error: z.ZodError): string {
  return toDetails(error.issues).map((detail) => `${detail.field.replaceAll('_', ' ')}: ${detail.message}`).join(' ');
}
