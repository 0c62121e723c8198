import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { downloadPackage } from '../../platform/stacks/download.js';
import { STACK_CATEGORIES } from '../../platform/stacks/manifest.js';
import { DEFAULT_PACKAGE_LIMITS, readStackPackage } from '../../platform/stacks/package.js';
import { type ApplyTarget, StacksPage, StackPage } from './stacks-pages.js';
import type { PortalContext, PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

/**
 * The path of the upload form, whose body may be a whole package (the portal's other forms are
 * small).
 */
export const STACK_UPLOAD_PATH = '/portal/stacks/upload';
/** How long adding a stack by URL may take. */
const DOWNLOAD_TIMEOUT_MS = 30_000;
/**
 * What the catalog and a stack's page say after a change (`?done=`): fixed texts, never the
 * query's.
 */
const DONE: Record<string, string> = { added: 'Stack added to the catalog.' };

/**
 * The catalog (`/portal/stacks`): cards with search and a category filter,
 * the upload form (a .zip or a URL), a stack's page with its inputs, a
 * download and the apply form made from its declared inputs. The same
 * services and permissions as the generic API.
 *
 * @example
 * portal.route('/stacks', stacksRoutes(deps, session));
 */
export function stacksRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const stacks = new Hono<GatewayEnv>();
  stacks.get('/', async (c) => {
    const actor = await session.signedIn(c);
    return catalogPage(deps, session, c, actor, { notice: DONE[c.req.query('done') ?? ''] });
  });
  stacks.post('/upload', async (c) => uploadStack(deps, session, c));
  stacks.get('/:name', async (c) => stackPage(deps, session, c, await session.signedIn(c)));
  stacks.post('/:name/apply', async (c) => applyStack(deps, session, c));
  return stacks;
}

async function catalogPage(
  deps: PortalDeps,
  session: PortalSession,
  c: PortalContext,
  actor: SignedInActor,
  extra: { error?: string; notice?: string } = {},
  status: 200 | 400 | 403 | 409 | 503 = 200,
) {
  const q = (c.req.query('q') ?? '').trim().slice(0, 200);
  const category = STACK_CATEGORIES.find((name) => name === c.req.query('category')) ?? '';
  const { rows, total } = await deps.stacks.list(actor, {
    q: q || undefined,
    category: category || undefined,
    offset: 0,
    limit: 100,
    sort: 'title',
  });
  return c.html(
    <StacksPage viewer={session.viewerOf(actor)} stacks={rows} total={total} q={q} category={category} {...extra} />,
    status,
  );
}

/** The upload form: a .zip, or the https:// address of one, added to the catalog. */
async function uploadStack(deps: PortalDeps, session: PortalSession, c: PortalContext) {
  const actor = await session.signedIn(c);
  const form = await c.req.parseBody();
  session.checkToken(actor, form._csrf);
  const file = form.package instanceof File && form.package.size > 0 ? form.package : null;
  const url = typeof form.url === 'string' ? form.url.trim() : '';
  try {
    if (!file && !url) throw new GatewayError('invalid_request', 'Choose a .zip, or give its https:// address.');
    const { zip, fileName } = file
      ? { zip: Buffer.from(await file.arrayBuffer()), fileName: file.name }
      : await downloadPackage(url, {
          ...deps.config.stackDownloads,
          maxBytes: DEFAULT_PACKAGE_LIMITS.maxZipBytes,
          timeoutMs: DOWNLOAD_TIMEOUT_MS,
          maxRedirects: 3,
        });
    const added = await deps.stacks.add(actor, await readStackPackage(zip, { fileName }), zip);
    return c.redirect(`/portal/stacks/${added.name}?done=added`, 303);
  } catch (error) {
    if (!(error instanceof GatewayError) || error.status >= 500) throw error;
    return catalogPage(deps, session, c, actor, { error: sentenceOf(error) }, 400);
  }
}

async function stackPage(
  deps: PortalDeps,
  session: PortalSession,
  c: PortalContext,
  actor: SignedInActor,
  extra: { values?: Record<string, string>; error?: string; details?: string[] } = {},
  status: 200 | 400 | 404 | 409 | 503 = 200,
) {
  const stack = await deps.stacks.get(actor, c.req.param('name')!);
  const scope = actor.platformAdmin ? null : actor.orgId;
  const { rows } = await deps.clusters.list(scope, { offset: 0, limit: 100, includeDeleted: false });
  const targets: ApplyTarget[] = await Promise.all(rows.map((cluster) => deps.clusters.get(cluster.id, null)));
  return c.html(
    <StackPage
      viewer={session.viewerOf(actor)}
      stack={stack}
      targets={targets}
      error={extra.error}
      details={extra.details}
      values={extra.values}
      notice={DONE[c.req.query('done') ?? '']}
    />,
    status,
  );
}

/** The apply form: a run of the stack queued on the chosen cluster or node, with the inputs given. */
async function applyStack(deps: PortalDeps, session: PortalSession, c: PortalContext) {
  const actor = await session.signedIn(c);
  const form = await c.req.parseBody();
  session.checkToken(actor, form._csrf);
  const values = Object.fromEntries(
    Object.entries(form).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string' && entry[0] !== '_csrf',
    ),
  );
  try {
    const stack = await deps.stacks.get(actor, c.req.param('name')!);
    const [kind, clusterId, nodeId] = (values.target ?? '').split(':');
    if (!clusterId || (kind !== 'cluster' && kind !== 'node') || (kind === 'node' && !nodeId))
      throw new GatewayError('invalid_request', 'Choose a cluster or a node to apply the stack to.');
    const inputs = inputsOf(stack.inputs, values);
    const run = await deps.runs.queue(actor, {
      clusterId,
      stackName: stack.id,
      nodeId: kind === 'node' ? nodeId : undefined,
      inputs,
    });
    deps.runWorker.poke();
    return c.redirect(`/portal/runs/${run.id}`, 303);
  } catch (error) {
    if (
      !(error instanceof GatewayError) ||
      (error.status >= 500 && error.code !== 'runner_unavailable') ||
      error.code === 'not_found'
    )
      throw error;
    const details = (error.details ?? []).map(
      (detail) => `${detail.field.replace(/^inputs\./, '')}: ${detail.message}`,
    );
    return stackPage(deps, session, c, actor, { values, error: error.message, details }, error.status as 400);
  }
}

/**
 * The form sends text: a number input becomes a number (or NaN, which the checks refuse); an empty
 * one is left out.
 */
function inputsOf(
  declared: ReadonlyArray<{ name: string; type: string }>,
  values: Record<string, string>,
): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const input of declared) {
    const raw = values[`input.${input.name}`];
    if (raw === undefined || raw === '') continue;
    inputs[input.name] = input.type === 'number' ? Number(raw) : raw;
  }
  return inputs;
}

/** A refusal as one sentence, its details after it. */
function sentenceOf(error: GatewayError): string {
  const details = (error.details ?? [])
    .map((detail) => detail.message)
    .filter((message) => !error.message.includes(message));
  return [error.message, ...details].join(' ');
}
