import { Hono } from 'hono';
import { currencies, currencyCode } from '../../platform/costs/currencies.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { topupBody } from '../admin/schemas.js';
import { OperatorOrgPage, OperatorOrgsPage } from './operator-orgs-pages.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';
import { chargesWritten } from '../fresh-charges.js';

const DONE: Record<string, string> = {
  topup:
    'Topped up: the balance and the ledger below show it, and the organization can spend it from its next request.',
  currency: 'Billing currency saved.',
};

/**
 * Organizations for platform admins (`/portal/operator/orgs`): every
 * organization with its balance and billing currency, and for each a top-up
 * with a note and the billing currency switch. The same services, validation
 * (`admin/schemas.ts`) and ledger entry as `POST /admin/v1/orgs/{id}/wallet/topups`,
 * which the CLI calls. Anyone else gets the portal's 404: the addresses do not
 * exist for them.
 *
 * @example
 * portal.route('/operator/orgs', operatorOrgsRoutes(deps, session));
 */
export function operatorOrgsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const orgs = new Hono<GatewayEnv>();
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));

  orgs.get('/', chargesWritten(deps.applier), async (c) => {
    const actor = await operator(c);
    const [rows, billing] = await Promise.all([deps.orgs.listWithBalances(), deps.costs.billingCurrencies()]);
    return c.html(
      <OperatorOrgsPage
        viewer={session.viewerOf(actor)}
        orgs={rows.map(({ org, balance }) => ({
          id: org.id,
          name: org.name,
          balance,
          billingCurrency: billing.get(org.id) ?? null,
        }))}
        currency={deps.config.currency}
      />,
    );
  });

  orgs.get('/:orgId', chargesWritten(deps.applier), async (c) => {
    const actor = await operator(c);
    return renderOrg(c, deps, session, actor, c.req.param('orgId'), { notice: DONE[c.req.query('done') ?? ''] });
  });

  orgs.post('/:orgId/topups', async (c) => {
    const actor = await operator(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const orgId = (await deps.orgs.get(c.req.param('orgId'))).id;
    const note = typeof form.note === 'string' && form.note.trim() !== '' ? form.note : undefined;
    const parsed = topupBody.safeParse({ amount: typeof form.amount === 'string' ? form.amount : '', note });
    if (!parsed.success)
      return renderOrg(c, deps, session, actor, orgId, { error: problems(parsed.error), status: 400 });
    await deps.wallets.credit(orgId, 'topup', parsed.data.amount, parsed.data.note);
    deps.log.info('operator topped up an organization in the portal', {
      requestId: c.get('requestId'),
      orgId,
      by: actor.userId,
    });
    return c.redirect(`/portal/operator/orgs/${encodeURIComponent(orgId)}?done=topup`, 303);
  });

  orgs.post('/:orgId/currency', async (c) => {
    const actor = await operator(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const orgId = (await deps.orgs.get(c.req.param('orgId'))).id;
    const chosen = typeof form.currency === 'string' ? form.currency : '';
    const parsed = currencyCode.nullable().safeParse(chosen === '' ? null : chosen);
    if (!parsed.success)
      return renderOrg(c, deps, session, actor, orgId, { error: 'Choose a currency from the list.', status: 400 });
    await deps.costs.setBillingCurrency(orgId, parsed.data);
    deps.log.info("operator set an organization's billing currency in the portal", {
      requestId: c.get('requestId'),
      orgId,
      currency: parsed.data,
      by: actor.userId,
    });
    return c.redirect(`/portal/operator/orgs/${encodeURIComponent(orgId)}?done=currency`, 303);
  });
  return orgs;
}

/**
 * The signed-in platform admin, or the portal's 404 for anyone else (the page does not exist for
 * them).
 */
export function operatorOnly(actor: SignedInActor): SignedInActor {
  if (!actor.platformAdmin) throw new GatewayError('not_found', 'There is no page at this address.');
  return actor;
}

async function renderOrg(
  c: PortalContext,
  deps: PortalDeps,
  session: PortalSession,
  actor: SignedInActor,
  orgId: string,
  extra: { notice?: string; error?: string; status?: 400 },
) {
  const org = await deps.orgs.get(orgId);
  const [balance, billingCurrency, ledger] = await Promise.all([
    deps.wallets.balance(org.id),
    deps.costs.billingCurrency(org.id),
    deps.wallets.ledgerPage(org.id, { limit: 10 }),
  ]);
  return c.html(
    <OperatorOrgPage
      viewer={session.viewerOf(actor)}
      org={{ id: org.id, name: org.name }}
      balance={balance}
      billingCurrency={billingCurrency}
      ledger={ledger.entries}
      currency={deps.config.currency}
      currencies={[...currencies().values()]}
      notice={extra.notice}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}
