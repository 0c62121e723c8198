import { Hono } from 'hono';
import { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { KeyRow } from '../../gateway/keys/service.js';
import { assertOwnerMayGive, BANDS, type Band, bandsOwnersGive } from '../../gateway/flow/bands.js';
import { KEY_EXPIRIES, KEY_LIMIT_MAX, KEY_NAME_MAX } from '../../gateway/keys/bounds.js';
import { KeyCreatedPage, KeyDeletePage, KeyEditPage, KeysPage } from './keys-pages.js';
import { type PortalSession, DONE_NOTICES, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const whole = (max: number) =>
  z.coerce.number().int('Must be a whole number.').min(1, 'Must be at least 1.').max(max, `Must be at most ${max}.`);
/** An empty field means unlimited. */
const optionalWhole = (max: number) =>
  z.preprocess((value) => (value === '' || value === undefined ? null : value), whole(max).nullable());
const keySettingsForm = z.object({
  requests_per_minute: whole(KEY_LIMIT_MAX.requests_per_minute),
  max_concurrency: whole(KEY_LIMIT_MAX.max_concurrency),
  tokens_per_minute: optionalWhole(KEY_LIMIT_MAX.tokens_per_minute),
  monthly_tokens: optionalWhole(KEY_LIMIT_MAX.monthly_tokens),
  store_request_data: z.literal('on').optional(),
  response_cache: z.literal('on').optional(),
});
/** The edit form: the band comes only from the owners' and admins' form (`bandsFor`). */
const editKeyForm = keySettingsForm.extend({ band: z.enum(BANDS).optional() });
const createKeyForm = keySettingsForm.extend({
  name: z.string().trim().min(1, 'Give the key a name.').max(KEY_NAME_MAX),
  expiry: z.enum(KEY_EXPIRIES),
});

/**
 * API keys (`/portal/keys`): list with when each was last used, create (the
 * secret shown once), edit limits and options, delete. Owners and admins
 * manage every key of their organization; members their own.
 *
 * @example
 * portal.route('/keys', keysRoutes(deps, session));
 */
export function keysRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const keys = new Hono<GatewayEnv>();
  keys.get('/', async (c) => {
    const actor = await session.signedIn(c);
    return c.html(await keysPage(deps, session, actor, { notice: DONE_NOTICES[c.req.query('done') ?? ''] }));
  });

  keys.post('/', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const parsed = createKeyForm.safeParse(form);
    const again = async (error: string, status: 400 | 409) =>
      c.html(await keysPage(deps, session, actor, { error }), status);
    if (!parsed.success) return again(problems(parsed.error), 400);
    try {
      const { key, secret } = await deps.keys.create({
        orgId: actor.orgId,
        userId: actor.userId,
        name: parsed.data.name,
        expiry: parsed.data.expiry,
        ...settingsOf(parsed.data),
      });
      c.header('Cache-Control', 'no-store');
      return c.html(<KeyCreatedPage viewer={session.viewerOf(actor)} apiKey={key} secret={secret} />, 201);
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'key_limit_reached') return again(error.message, 409);
      throw error;
    }
  });

  keys.get('/:id/edit', async (c) => {
    const actor = await session.signedIn(c);
    const key = await manageableKey(deps, actor, c.req.param('id'));
    return c.html(<KeyEditPage viewer={session.viewerOf(actor)} apiKey={key} bands={bandsFor(actor, key)} />);
  });

  keys.post('/:id', async (c) => {
    const actor = await session.signedIn(c);
    const key = await manageableKey(deps, actor, c.req.param('id'));
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const parsed = editKeyForm.safeParse(form);
    if (!parsed.success) {
      const viewer = session.viewerOf(actor);
      const error = problems(parsed.error);
      return c.html(<KeyEditPage viewer={viewer} apiKey={key} bands={bandsFor(actor, key)} error={error} />, 400);
    }
    const { band } = parsed.data;
    if (band !== undefined) assertMayGive(actor, key, band);
    await deps.keys.update(key.id, { ...settingsOf(parsed.data), band });
    // Post, then redirect: reloading the page does not post again.
    return c.redirect('/portal/keys?done=saved', 303);
  });

  keys.get('/:id/delete', async (c) => {
    const actor = await session.signedIn(c);
    return c.html(
      <KeyDeletePage viewer={session.viewerOf(actor)} apiKey={await manageableKey(deps, actor, c.req.param('id'))} />,
    );
  });

  keys.post('/:id/delete', async (c) => {
    const actor = await session.signedIn(c);
    const key = await manageableKey(deps, actor, c.req.param('id'));
    session.checkToken(actor, (await c.req.parseBody())._csrf);
    await deps.keys.revoke(key.id);
    return c.redirect('/portal/keys?done=deleted', 303);
  });
  return keys;
}

/** The list of keys the actor manages, with a notice or the error of a form that was not taken. */
async function keysPage(
  deps: PortalDeps,
  session: PortalSession,
  actor: SignedInActor,
  extra: { notice?: string; error?: string },
) {
  return (
    <KeysPage
      viewer={session.viewerOf(actor)}
      keys={await manageableKeys(deps, actor)}
      lastUsed={await deps.usageReports.keysLastUsed(actor.orgId)}
      allowance={allowanceOf(deps, actor)}
      {...extra}
    />
  );
}

/** Owners and admins manage every key of their organization; members the keys that act as them. */
async function manageableKeys(deps: PortalDeps, actor: SignedInActor): Promise<KeyRow[]> {
  const keys = await deps.keys.list(actor.orgId);
  return actor.role === 'member' && !actor.platformAdmin ? keys.filter((key) => key.userId === actor.userId) : keys;
}

async function manageableKey(deps: PortalDeps, actor: SignedInActor, id: string): Promise<KeyRow> {
  const key = (await manageableKeys(deps, actor)).find((k) => k.id === id);
  if (!key) throw new GatewayError('not_found', 'There is no such key among yours.');
  return key;
}

/**
 * The bands the actor may choose for `key` (docs/fair-sharing.md); null for a member, who sets
 * none.
 */
function bandsFor(actor: SignedInActor, key: KeyRow): readonly Band[] | null {
  if (actor.platformAdmin) return BANDS;
  return actor.role === 'member' ? null : bandsOwnersGive(key.band);
}

function assertMayGive(actor: SignedInActor, key: KeyRow, band: Band): void {
  if (actor.platformAdmin || band === key.band) return;
  if (actor.role === 'member')
    throw new GatewayError('forbidden', "Only the organization's owners and admins set a key's band.");
  assertOwnerMayGive(band, key.band);
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

function allowanceOf(deps: PortalDeps, actor: SignedInActor): { userId: string; perAccount: number } {
  return { userId: actor.userId, perAccount: deps.config.keysPerAccount };
}
