import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { SignedInActor } from '../context.js';
import { createRateCardBody, rateCardsQuery } from '../admin/schemas.js';
import { OperatorRateCardsPage } from './operator-rate-cards-pages.js';
import { operatorOnly } from './operator-orgs.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const DONE: Record<string, string> = {
  added: "Rate card added: cost reports price the profile's hours with it.",
  deleted: 'Rate card deleted: reports price its hours again as if it never existed.',
};

interface Extra {
  notice?: string;
  error?: string;
  form?: Record<string, string>;
  status?: number;
}

/**
 * Rate cards for platform admins (`/portal/operator/rate-cards`): what a
 * node-hour and a GPU-hour of each hardware profile cost, in a currency, from
 * a date; list them (all, or one profile's), add one, delete one. The same
 * schemas and service as `/admin/v1/rate-cards` (`tollgate rate-cards
 * list|add|delete`): an overlap or an unknown profile is refused with the
 * API's reason, on the form. 404 for anyone else.
 *
 * @example
 * portal.route('/operator/rate-cards', operatorRateCardsRoutes(deps, session));
 */
export function operatorRateCardsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const cards = new Hono<GatewayEnv>();
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));
  const render = (c: PortalContext, actor: SignedInActor, extra: Extra = {}) =>
    renderCards(c, deps, session, actor, extra);
  const refused = (c: PortalContext, actor: SignedInActor, form: Record<string, string>, error: unknown) => {
    if (error instanceof GatewayError) return render(c, actor, { error: error.message, form, status: error.status });
    throw error;
  };

  cards.get('/', async (c) => render(c, await operator(c), { notice: DONE[c.req.query('done') ?? ''] }));

  cards.post('/', async (c) => {
    const actor = await operator(c);
    const { form, parsed } = await readCardForm(c, deps, session, actor);
    if (!parsed.success) return render(c, actor, { error: problems(parsed.error), form, status: 400 });
    const card = parsed.data;
    try {
      const row = await deps.costs.rateCards.add({
        profile: card.profile,
        currency: card.currency,
        nodeHourPrice: card.node_hour_price,
        gpuHourPrice: card.gpu_hour_price,
        effectiveFrom: card.effective_from,
        effectiveTo: card.effective_to ?? null,
      });
      deps.log.info('operator added a rate card in the portal', {
        requestId: c.get('requestId'),
        rateCardId: row.id,
        profile: row.profile,
        by: actor.userId,
      });
    } catch (error) {
      return refused(c, actor, form, error);
    }
    return c.redirect('/portal/operator/rate-cards?done=added', 303);
  });

  cards.post('/delete', async (c) => {
    const actor = await operator(c);
    const body = await c.req.parseBody();
    session.checkToken(actor, body._csrf);
    const id = typeof body.id === 'string' ? body.id : '';
    try {
      await deps.costs.rateCards.delete(id);
      deps.log.info('operator deleted a rate card in the portal', {
        requestId: c.get('requestId'),
        rateCardId: id,
        by: actor.userId,
      });
    } catch (error) {
      return refused(c, actor, {}, error);
    }
    return c.redirect('/portal/operator/rate-cards?done=deleted', 303);
  });
  return cards;
}

/**
 * The rate cards page: the cards (all, or the `?profile=` one's), the profiles, and what a change
 * said.
 */
async function renderCards(
  c: PortalContext,
  deps: PortalDeps,
  session: PortalSession,
  actor: SignedInActor,
  extra: Extra,
) {
  const query = rateCardsQuery.safeParse(c.req.query());
  const profile = query.success && query.data.profile ? query.data.profile : undefined;
  const [rows, profiles] = await Promise.all([deps.costs.rateCards.list(profile), deps.clusters.listProfiles()]);
  const names = profiles.map((p) => p.name);
  const page = (
    <OperatorRateCardsPage
      viewer={session.viewerOf(actor)}
      cards={rows}
      profiles={names}
      profile={profile}
      notice={extra.notice}
      error={extra.error}
      form={extra.form ?? {}}
    />
  );
  return c.html(page, (extra.status ?? 200) as 200);
}

/**
 * The add form's fields as text (the currency upper-cased), its token checked, and parsed as `POST
 * /admin/v1/rate-cards` parses its body.
 */
async function readCardForm(c: PortalContext, deps: PortalDeps, session: PortalSession, actor: SignedInActor) {
  const body = await c.req.parseBody();
  session.checkToken(actor, body._csrf);
  const text = (name: string) => (typeof body[name] === 'string' ? body[name].trim() : '');
  const form = {
    profile: text('profile'),
    currency: text('currency').toUpperCase(),
    node_hour_price: text('node_hour_price'),
    gpu_hour_price: text('gpu_hour_price'),
    from: text('from'),
    to: text('to'),
  };
  const { from, to, ...prices } = form;
  const parsed = createRateCardBody.safeParse({
    ...prices,
    effective_from: from,
    ...(to === '' ? {} : { effective_to: to }),
  });
  return { form, parsed };
}
