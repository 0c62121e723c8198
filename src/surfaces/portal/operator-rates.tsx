import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { conversionRateKey, setConversionRateBody } from '../admin/schemas.js';
import { OperatorRatesPage } from './operator-rates-pages.js';
import { operatorOnly } from './operator-orgs.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

/**
 * Conversion rates for platform admins (`/portal/operator/rates`): the
 * rates by day with which cost reports convert a rate card's currency into
 * an organization's billing currency; set one (the same checks as `PUT
 * /admin/v1/conversion-rates/{base}/{quote}/{date}`) or remove one. 404 for
 * anyone else.
 *
 * @example
 * portal.route('/operator/rates', operatorRatesRoutes(deps, session));
 */
export function operatorRatesRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const rates = new Hono<GatewayEnv>();
  const { costs } = deps;
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));
  const render = async (
    c: PortalContext,
    actor: SignedInActor,
    extra: { notice?: string; error?: string; form?: Record<string, string>; status?: 400 } = {},
  ) =>
    c.html(
      <OperatorRatesPage
        viewer={session.viewerOf(actor)}
        rates={await costs.conversionRates.list()}
        notice={extra.notice}
        error={extra.error}
        form={extra.form ?? {}}
      />,
      extra.status ?? 200,
    );

  rates.get('/', async (c) =>
    render(c, await operator(c), {
      notice:
        c.req.query('done') === 'set'
          ? 'Rate saved: reports convert with it from now on.'
          : c.req.query('done') === 'removed'
            ? 'Rate removed.'
            : undefined,
    }),
  );

  rates.post('/', async (c) => {
    const actor = await operator(c);
    const { form, key } = await readRateForm(c, deps, session, actor);
    if (!key.success) return render(c, actor, { error: problems(key.error), form, status: 400 });
    const rate = setConversionRateBody.safeParse({ rate: form.rate });
    if (!rate.success) return render(c, actor, { error: problems(rate.error), form, status: 400 });
    await costs.conversionRates.set({
      base: key.data.base,
      quote: key.data.quote,
      effectiveOn: key.data.date,
      rate: rate.data.rate,
    });
    deps.log.info('operator set a conversion rate in the portal', {
      requestId: c.get('requestId'),
      ...key.data,
      by: actor.userId,
    });
    return c.redirect('/portal/operator/rates?done=set', 303);
  });

  rates.post('/remove', async (c) => {
    const actor = await operator(c);
    const { form, key } = await readRateForm(c, deps, session, actor);
    if (!key.success) return render(c, actor, { error: problems(key.error), form, status: 400 });
    await costs.conversionRates.delete({ base: key.data.base, quote: key.data.quote, effectiveOn: key.data.date });
    deps.log.info('operator removed a conversion rate in the portal', {
      requestId: c.get('requestId'),
      ...key.data,
      by: actor.userId,
    });
    return c.redirect('/portal/operator/rates?done=removed', 303);
  });
  return rates;
}

/**
 * A rate form's fields as text, its token checked, and its pair and day checked as the API checks
 * its path.
 */
async function readRateForm(c: PortalContext, deps: PortalDeps, session: PortalSession, actor: SignedInActor) {
  const body = await c.req.parseBody();
  session.checkToken(actor, body._csrf);
  const text = (name: string) => (typeof body[name] === 'string' ? body[name].trim() : '');
  const form = {
    base: text('base').toUpperCase(),
    quote: text('quote').toUpperCase(),
    date: text('date'),
    rate: text('rate'),
  };
  return { form, key: conversionRateKey.safeParse({ base: form.base, quote: form.quote, date: form.date }) };
}
