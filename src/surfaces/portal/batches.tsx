import { Hono } from 'hono';
import { webStreamOf } from '../../shared/blobs/blob-store.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { chargesWritten } from '../fresh-charges.js';
import { BatchesPage } from './batches-pages.js';
import type { PortalDeps } from './deps.js';
import type { PortalSession } from './session.js';

/** The batches a page lists: the newest, every project's. */
const BATCHES_SHOWN = 50;

/**
 * The organization's batches (`/portal/batches`): each one's status, how far its lines have got,
 * what they cost so far, and its result files to download (`/portal/batches/{id}/output` and
 * `/errors`), for any of the organization's people. Another organization's batch is a 404, as an
 * unknown one.
 *
 * @example
 * portal.route('/batches', batchesRoutes(deps, session));
 */
export function batchesRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  // Cost so far includes this process's latest charges.
  routes.get('/', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    const rows = await deps.batches.org.latest(actor.orgId, BATCHES_SHOWN);
    return c.html(
      <BatchesPage
        viewer={session.viewerOf(actor)}
        rows={rows}
        currency={deps.config.currency}
        shown={BATCHES_SHOWN}
      />,
    );
  });
  for (const kind of ['output', 'errors'] as const) {
    routes.get(`/:id/${kind}`, async (c) => {
      const actor = await session.signedIn(c);
      const id = c.req.param('id');
      const batch = await deps.batches.org.get(actor.orgId, id);
      const fileId = kind === 'output' ? batch?.outputFileId : batch?.errorFileId;
      const found =
        batch && fileId
          ? await deps.fileStore.content({ orgId: batch.orgId, projectId: batch.projectId }, fileId)
          : null;
      if (!found)
        throw new GatewayError('not_found', `No ${kind === 'output' ? 'output' : 'error'} file of batch ${id}.`);
      return c.body(webStreamOf(found.bytes), 200, {
        'content-type': 'application/jsonl; charset=utf-8',
        'content-length': String(found.file.bytes),
        'content-disposition': `attachment; filename="${id}${kind === 'errors' ? '.errors' : ''}.jsonl"`,
      });
    });
  }
  return routes;
}
