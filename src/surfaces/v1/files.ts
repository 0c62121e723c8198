import { type Context, Hono } from 'hono';
import type { FileListQuery, FileOwner } from '../../gateway/files/store.js';
import { receiveUpload } from '../../gateway/files/upload.js';
import { requireKey } from '../../gateway/requests/auth.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';
import { echoedId } from '../../gateway/stored-responses/ids.js';
import { webStreamOf } from '../../shared/blobs/blob-store.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { MultipartReader } from '../../shared/http/multipart.js';
import { headerOf } from '../../shared/http/request.js';
import { bodyChunks, discardChunks } from '../../shared/http/request-stream.js';
import type { V1Deps } from './deps.js';

/** What a form adds to its file: a few headers and boundaries, never a megabyte. */
const FORM_OVERHEAD_BYTES = 1024 * 1024;

/**
 * OpenAI's Files API: `POST /v1/files` (a multipart upload with `purpose`),
 * `GET /v1/files` (a page), `GET` and `DELETE /v1/files/{id}`, and
 * `GET /v1/files/{id}/content`. Bytes are streamed in and out of
 * `deps.blobs`; the rows are `deps.fileStore`'s. A file is its
 * organization's and its key's project's: any other id, another
 * organization's included, is the same 404.
 *
 * @example
 * v1.route('/files', filesRoutes(deps));
 */
export function filesRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const guarded = [requireKey(deps.keys), admittedByKeyLimits(deps.gateKeeper)] as const;
  const store = deps.fileStore;
  routes.post('/', ...guarded, async (c) => c.json(await upload(c, deps)));
  routes.get('/', ...guarded, async (c) => {
    const page = await store.list(ownerOf(c), pageOf(c));
    return c.json({
      object: 'list',
      data: page.data,
      first_id: page.data[0]?.id ?? null,
      last_id: page.data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    });
  });
  routes.get('/:id', ...guarded, async (c) => {
    const file = await store.get(ownerOf(c), c.req.param('id'));
    if (!file) throw notFound(c.req.param('id'));
    return c.json(file);
  });
  routes.get('/:id/content', ...guarded, async (c) => {
    const found = await store.content(ownerOf(c), c.req.param('id'));
    if (!found) throw notFound(c.req.param('id'));
    return c.body(webStreamOf(found.bytes), 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(found.file.bytes),
      'content-disposition': `attachment; filename="${found.file.filename.replace(/["\\]/g, '_')}"`,
    });
  });
  routes.delete('/:id', ...guarded, async (c) => {
    const id = c.req.param('id');
    if (!(await store.delete(ownerOf(c), id))) throw notFound(id);
    return c.json({ id, object: 'file', deleted: true });
  });
  return routes;
}

/** The upload, read as it arrives; a refusal answered once what the client still sends is drained. */
async function upload(c: Context<GatewayEnv>, deps: V1Deps) {
  const { files } = deps.config;
  const boundary = MultipartReader.boundaryOf(headerOf(c, 'content-type'));
  if (!boundary)
    throw new GatewayError('unsupported_media_type', 'Send the file as multipart/form-data, with a boundary.', {
      details: [{ field: 'content-type', message: 'must be multipart/form-data' }],
    });
  const chunks = bodyChunks(c);
  try {
    const declared = Number(headerOf(c, 'content-length') ?? Number.NaN);
    if (declared > files.maxBytes + FORM_OVERHEAD_BYTES)
      throw new GatewayError(
        'request_too_large',
        `The file is larger than ${files.maxBytes} bytes, the most one file may be (TOLLGATE_FILES_MAX_BYTES).`,
        { headers: { connection: 'close' }, details: [{ field: 'file', message: `over ${files.maxBytes} bytes` }] },
      );
    return await receiveUpload(new MultipartReader(chunks, boundary), ownerOf(c), {
      files: deps.fileStore,
      blobs: deps.blobs,
      settings: {
        maxBytes: files.maxBytes,
        maxLines: files.maxLines,
        maxLineBytes: deps.config.maxBodyBytes,
        maxDepth: deps.config.maxJsonDepth,
      },
    });
  } catch (error) {
    await discardChunks(chunks, deps.config.oversizeDrain);
    throw error;
  }
}

function ownerOf(c: Context<GatewayEnv>): FileOwner {
  const caller = c.get('caller');
  return { orgId: caller.orgId, projectId: caller.projectId };
}

/**
 * `purpose`, `limit` (1-10000, default 10000), `order` (default desc) and `after`, as OpenAI reads
 * them.
 */
function pageOf(c: Context<GatewayEnv>): FileListQuery {
  const { purpose, limit = '10000', order = 'desc', after } = c.req.query();
  if (!/^\d{1,5}$/.test(limit) || Number(limit) < 1 || Number(limit) > 10_000)
    throw invalid('limit', 'must be a whole number from 1 to 10000');
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc');
  return { purpose: purpose || undefined, limit: Number(limit), order, after: after || undefined };
}

/** The same answer whatever the reason: unknown, deleted, or another organization's or project's. */
function notFound(id: string): GatewayError {
  return new GatewayError('not_found', `No file with id \`${echoedId(id)}\` was found.`);
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}
