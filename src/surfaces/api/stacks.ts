import type { Hono } from 'hono';
import { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import { webStreamOf } from '../../shared/blobs/blob-store.js';
import { GatewayError } from '../../shared/http/errors.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES, requireJsonBody } from '../../shared/http/request.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { ApiDeps } from './deps.js';
import { STACK_SORTS, type StackRow } from '../../platform/stacks/service.js';
import { STACK_CATEGORIES, stackManifest } from '../../platform/stacks/manifest.js';
import { downloadPackage } from '../../platform/stacks/download.js';
import { DEFAULT_PACKAGE_LIMITS, readStackPackage } from '../../platform/stacks/package.js';
import { offsetOf, paged, pageQuery } from './pagination.js';
import { apiResource, type ClientOf } from './resource.js';
import { inUploadSlot } from './upload-slot.js';

const stacksQuery = z
  .object({ q: z.string().trim().max(200).optional(), category: z.enum(STACK_CATEGORIES).optional() })
  .and(pageQuery(STACK_SORTS));
const addByUrlBody = z.strictObject({ url: z.string().min(1).max(2000) });
/** How long downloading a package by URL may take, redirects included. */
const DOWNLOAD_TIMEOUT_MS = 30_000;
const updateStackBody = stackManifest
  .pick({ title: true, description: true, category: true, icon: true, applicable_profiles: true })
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, {
    message: 'Send at least one of title, description, category, icon, applicable_profiles.',
    path: ['body'],
  });

/** A stack as the API shows it: its fields, never its bytes (those are `/download`). */
export function stackView(row: StackRow) {
  return {
    id: row.id,
    name: row.name,
    visibility: row.visibility,
    owner_id: row.ownerId,
    title: row.title,
    description: row.description,
    category: row.category,
    icon: row.icon,
    applicable_profiles: row.applicableProfiles,
    inputs: row.inputs,
    size_bytes: row.packageBytes,
    sha256: row.packageSha256,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/**
 * The template catalog under the generic API (`/api/v1/stacks` and
 * `/v1/stacks`): list with search and a category filter, get, download,
 * add (a .zip as `multipart/form-data`, field `package`, or JSON `{url}`), change and delete,
 * with the spec's permissions (`stacks/service.ts`).
 *
 * @example
 * mountResource(api, '/stacks', stacksRoutes(deps, clientOf));
 */
export function stacksRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const catalog = deps.stacks;
  // A session's upload from elsewhere is refused by apiAccess. An upload takes one of the process's
  // upload slots before its body is read; then the body has room for the largest package and its
  // multipart framing. Only an upload: any other method, which takes no slot, keeps the management
  // limit, or many at once would all be read.
  const uploadLimit = limitBody(DEFAULT_PACKAGE_LIMITS.maxZipBytes + 64 * 1024, deps.config.oversizeDrain);
  const managementLimit = limitBody(MANAGEMENT_MAX_BODY_BYTES, deps.config.oversizeDrain);
  const upload = inUploadSlot(deps.uploads, deps.config.oversizeDrain, (c) => c.get('actor').userId, uploadLimit);
  const api = apiResource(deps, clientOf, requireJsonBody({ multipart: true }), (c, next) =>
    c.req.method === 'POST' ? upload(c, next) : managementLimit(c, next),
  );

  api.get('/', async (c) => {
    const query = readQuery(c, stacksQuery);
    const { rows, total } = await catalog.list(c.get('actor'), {
      q: query.q,
      category: query.category,
      offset: offsetOf(query.page, query.limit),
      limit: query.limit,
      sort: query.sort,
    });
    return c.json(paged(rows.map(stackView), total, query.page, query.limit));
  });

  api.get('/:name', async (c) => c.json(stackView(await catalog.get(c.get('actor'), c.req.param('name')))));

  api.get('/:name/download', async (c) => {
    const row = await catalog.get(c.get('actor'), c.req.param('name'));
    // Streamed from the blob store as the client reads it.
    const bytes = await catalog.openPackage(row);
    if (!bytes) throw new GatewayError('not_found', `Stack ${c.req.param('name')} does not exist.`);
    return c.body(webStreamOf(bytes), 200, {
      'content-type': 'application/zip',
      'content-length': String(row.packageBytes),
      'content-disposition': `attachment; filename="${row.name}.zip"`,
      etag: `"${row.packageSha256}"`,
    });
  });

  api.post('/', async (c) => {
    const type = c.req.header('content-type') ?? '';
    if (!type.toLowerCase().startsWith('multipart/form-data')) {
      // JSON: {"url": "https://…/stack.zip"}, fetched with the guards of `stacks/download.ts`.
      const { url } = await readBody(c, addByUrlBody);
      const { zip, fileName } = await downloadPackage(url, {
        ...deps.config.stackDownloads,
        maxBytes: DEFAULT_PACKAGE_LIMITS.maxZipBytes,
        timeoutMs: DOWNLOAD_TIMEOUT_MS,
        maxRedirects: 3,
      });
      const read = await readStackPackage(zip, { fileName });
      return c.json(stackView(await catalog.add(c.get('actor'), read, zip)), 201);
    }
    const form = await c.req.parseBody();
    const file = form.package;
    if (!(file instanceof File))
      throw new GatewayError('invalid_request', 'Invalid request body.', {
        details: [{ field: 'package', message: 'Attach the .zip as the file field "package".' }],
      });
    const zip = Buffer.from(await file.arrayBuffer());
    const read = await readStackPackage(zip, { fileName: file.name });
    return c.json(stackView(await catalog.add(c.get('actor'), read, zip)), 201);
  });

  api.patch('/:name', async (c) => {
    const change = await readBody(c, updateStackBody);
    return c.json(stackView(await catalog.update(c.get('actor'), c.req.param('name'), change)));
  });

  api.delete('/:name', async (c) => {
    await catalog.delete(c.get('actor'), c.req.param('name'));
    return c.body(null, 204);
  });
  return api;
}
