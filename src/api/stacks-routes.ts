import type { Context, Hono, MiddlewareHandler } from 'hono';
import { csrf } from 'hono/csrf';
import { z } from 'zod';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { limitBody } from '../http/request.js';
import { readBody, readQuery } from '../http/validate.js';
import type { Services } from '../services.js';
import { STACK_SORTS, type StackRow } from '../stacks/catalog.js';
import { STACK_CATEGORIES, stackManifest } from '../stacks/manifest.js';
import { downloadPackage } from '../stacks/download.js';
import { DEFAULT_PACKAGE_LIMITS, readStackPackage } from '../stacks/package.js';
import { apiAccess } from './access.js';
import { offsetOf, paged, pageQuery } from './pagination.js';

const stacksQuery = z.object({ q: z.string().trim().max(200).optional(), category: z.enum(STACK_CATEGORIES).optional() }).and(pageQuery(STACK_SORTS));
const addByUrlBody = z.strictObject({ url: z.string().min(1).max(2000) });
/** How long downloading a package by URL may take, redirects included. */
const DOWNLOAD_TIMEOUT_MS = 30_000;
const updateStackBody = stackManifest
  .pick({ title: true, description: true, category: true, icon: true, applicable_profiles: true })
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: 'Send at least one of title, description, category, icon, applicable_profiles.', path: ['body'] });

/** A stack as the API shows it: its fields, never its bytes (those are `/download`). */
export function stackView(row: StackRow) {
  return {
    name: row.name,
    visibility: row.visibility,
    owner_id: row.ownerId,
    title: row.title,
    description: row.description,
    category: row.category,
    icon: row.icon,
    applicable_profiles: row.applicableProfiles,
    inputs: row.inputs,
    size_bytes: row.package.length,
    sha256: row.packageSha256,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/**
 * The template catalog under the generic API (`/api/v1/stacks` and
 * `/v1/stacks`): list with search and a category filter, get, download,
 * add (a .zip as `multipart/form-data`, field `package`, or JSON `{url}`), change and delete,
 * with the spec's permissions (`stacks/catalog.ts`).
 *
 * @example
 * registerStackRoutes(api, services, clientOf);
 */
export function registerStackRoutes(api: Hono<GatewayEnv>, services: Services, clientOf: (c: Context) => { address: string; https: boolean }): void {
  const catalog = services.stacks;
  // Room for the largest package and its multipart framing.
  api.use('/stacks/*', limitBody(DEFAULT_PACKAGE_LIMITS.maxZipBytes + 64 * 1024), apiAccess(services, clientOf), uploadGuard(clientOf));

  api.get('/stacks', async (c) => {
    const query = readQuery(c, stacksQuery);
    const { rows, total } = await catalog.list(c.get('actor'), { q: query.q, category: query.category, offset: offsetOf(query.page, query.limit), limit: query.limit, sort: query.sort });
    return c.json(paged(rows.map(stackView), total, query.page, query.limit));
  });

  api.get('/stacks/:name', async (c) => c.json(stackView(await catalog.get(c.get('actor'), c.req.param('name')))));

  api.get('/stacks/:name/download', async (c) => {
    const row = await catalog.get(c.get('actor'), c.req.param('name'));
    return c.body(new Uint8Array(row.package), 200, { 'content-type': 'application/zip', 'content-disposition': `attachment; filename="${row.name}.zip"`, etag: `"${row.packageSha256}"` });
  });

  api.post('/stacks', async (c) => {
    const type = c.req.header('content-type') ?? '';
    if (!type.toLowerCase().startsWith('multipart/form-data')) {
      // JSON: {"url": "https://…/stack.zip"}, fetched with the guards of `stacks/download.ts`.
      const { url } = await readBody(c, addByUrlBody);
      const { zip, fileName } = await downloadPackage(url, { ...services.config.stackDownloads, maxBytes: DEFAULT_PACKAGE_LIMITS.maxZipBytes, timeoutMs: DOWNLOAD_TIMEOUT_MS, maxRedirects: 3 });
      const read = await readStackPackage(zip, { fileName });
      return c.json(stackView(await catalog.add(c.get('actor'), read, zip)), 201);
    }
    const form = await c.req.parseBody();
    const file = form.package;
    if (!(file instanceof File)) throw new GatewayError('invalid_request', 'Invalid request body.', { details: [{ field: 'package', message: 'Attach the .zip as the file field "package".' }] });
    const zip = Buffer.from(await file.arrayBuffer());
    const read = await readStackPackage(zip, { fileName: file.name });
    return c.json(stackView(await catalog.add(c.get('actor'), read, zip)), 201);
  });

  api.patch('/stacks/:name', async (c) => {
    const change = await readBody(c, updateStackBody);
    return c.json(stackView(await catalog.update(c.get('actor'), c.req.param('name'), change)));
  });

  api.delete('/stacks/:name', async (c) => {
    await catalog.delete(c.get('actor'), c.req.param('name'));
    return c.body(null, 204);
  });
}

/**
 * Bodies are JSON, or, for an upload, multipart. A multipart post with a
 * session cookie must come from this site (Hono's csrf check: a form on
 * another site could otherwise upload with the cookie); one with an API key
 * cannot be forged by a browser.
 */
function uploadGuard(clientOf: (c: Context) => { https: boolean }): MiddlewareHandler<GatewayEnv> {
  const sameSite = csrf({ origin: (origin, c) => origin === `${clientOf(c).https ? 'https' : 'http'}://${c.req.header('host') ?? ''}` });
  return async (c, next) => {
    const type = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (type === undefined || type === 'application/json') return next();
    if (type === 'multipart/form-data' && c.get('actor').keyId) return next();
    if (type === 'multipart/form-data') {
      try {
        return await sameSite(c, next);
      } catch {
        throw new GatewayError('forbidden', 'An upload with a session must come from this site.');
      }
    }
    throw new GatewayError('unsupported_media_type', 'Send JSON, or a package as multipart/form-data.', { details: [{ field: 'content-type', message: 'Must be application/json or multipart/form-data.' }] });
  };
}
