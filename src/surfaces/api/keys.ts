import type { Hono } from 'hono';
import { z } from 'zod';
import { assertOwnerMayGive, BANDS } from '../../gateway/flow/bands.js';
import { keyStatus, type KeyRow } from '../../gateway/keys/service.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody } from '../../shared/http/validate.js';
import type { SignedInActor } from '../context.js';
import type { ApiDeps } from './deps.js';
import { apiResource, type ClientOf } from './resource.js';

const updateKeyBody = z.strictObject({ band: z.enum(BANDS) });

/** A key as the generic API shows one: never its secret, only the hint. */
export function apiKeyView(key: KeyRow, now = new Date()) {
  return {
    id: key.id,
    name: key.name,
    org_id: key.orgId,
    user_id: key.userId,
    project_id: key.projectId,
    hint: key.secretHint,
    status: keyStatus(key, now),
    band: key.band,
    created_at: key.createdAt.toISOString(),
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}

/**
 * API keys under the generic API (`/api/v1/keys/{id}`, `/v1/keys/{id}`): owners and admins see
 * every key of their organization, members the keys that act as them (as in the portal); another
 * organization's key is 404. Owners and admins set a key's priority band (docs/fair-sharing.md),
 * within what `assertOwnerMayGive` lets them give.
 *
 * @example
 * mountResource(api, '/keys', keysRoutes(deps, clientOf));
 */
export function keysRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const keys = apiResource(deps, clientOf);

  keys.get('/:id', async (c) => c.json(apiKeyView(await visibleKey(deps, c.get('actor'), c.req.param('id')))));

  keys.patch('/:id', async (c) => {
    const actor = c.get('actor');
    const key = await visibleKey(deps, actor, c.req.param('id'));
    if (actor.role === 'member' && !actor.platformAdmin)
      throw new GatewayError('forbidden', "Only the organization's owners and admins set a key's band.");
    const { band } = await readBody(c, updateKeyBody);
    if (!actor.platformAdmin) assertOwnerMayGive(band, key.band);
    return c.json(apiKeyView(await deps.keys.update(key.id, { band })));
  });

  return keys;
}

/**
 * The key, if the actor may see it; 404 otherwise, so that other organizations' ids are not
 * confirmed.
 */
async function visibleKey(deps: ApiDeps, actor: SignedInActor, id: string): Promise<KeyRow> {
  const key = await deps.keys.get(id).catch((error: unknown) => {
    if (error instanceof GatewayError && error.code === 'not_found') return null;
    throw error;
  });
  const sees =
    key !== null &&
    (actor.platformAdmin || (key.orgId === actor.orgId && (actor.role !== 'member' || key.userId === actor.userId)));
  if (!sees) throw new GatewayError('not_found', `API key ${id} does not exist.`);
  return key;
}
