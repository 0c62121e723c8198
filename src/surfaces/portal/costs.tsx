import { Hono } from 'hono';
import { currencies, currencyCode } from '../../platform/costs/currencies.js';
import { costsCsv, csvFileName } from '../../platform/costs/csv.js';
import { type CostWindow, isReportMonth, monthWindow, parseWindow } from '../../platform/costs/window.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { type CostsPageWindow, CostsPage } from './costs-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

const DAY_MS = 86_400_000;

/**
 * The portal's costs page (`/portal/costs`), its CSV (`/portal/costs.csv`)
 * and the billing currency switch (`POST /portal/costs/currency`, owners and
 * admins, with the session's form token). Users see their organization;
 * platform admins every organization with usage. Mounted at `/`: its paths
 * are siblings, not nested.
 *
 * @example
 * portal.route('/', costsRoutes(deps, session));
 */
export function costsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const costs = new Hono<GatewayEnv>();
  const reportOf = (actor: SignedInActor, window: CostWindow, now: Date) =>
    deps.costs.report({ orgId: actor.platformAdmin ? null : actor.orgId }, window, now);
  const manages = (actor: SignedInActor) => actor.role !== 'member' || actor.platformAdmin;

  costs.get('/costs', async (c) => {
    const actor = await session.signedIn(c);
    const now = new Date();
    const { window, page, error } = pageWindow(c.req.query(), now);
    const [report, billingCurrency] = await Promise.all([
      reportOf(actor, window, now),
      deps.costs.billingCurrency(actor.orgId),
    ]);
    const notice =
      c.req.query('done') === 'currency'
        ? billingCurrency
          ? `Costs are now shown in ${billingCurrency} where a conversion rate is set.`
          : "Costs are now shown in each rate card's own currency."
        : undefined;
    return c.html(
      <CostsPage
        viewer={session.viewerOf(actor)}
        window={page}
        report={report}
        billingCurrency={billingCurrency}
        canSetCurrency={manages(actor)}
        currencies={[...currencies().values()]}
        error={error}
        notice={notice}
      />,
      error ? 400 : 200,
    );
  });

  costs.get('/costs.csv', async (c) => {
    const actor = await session.signedIn(c);
    const now = new Date();
    const report = await reportOf(actor, pageWindow(c.req.query(), now).window, now);
    return c.body(costsCsv(report), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="${csvFileName(report)}"`,
    });
  });

  costs.post('/costs/currency', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    if (!manages(actor))
      throw new GatewayError('forbidden', "Only the organization's owners and admins set its billing currency.");
    const chosen = typeof form.currency === 'string' ? form.currency : '';
    const parsed = currencyCode.nullable().safeParse(chosen === '' ? null : chosen);
    if (!parsed.success) throw new GatewayError('invalid_request', 'Choose a currency from the list.');
    await deps.costs.setBillingCurrency(actor.orgId, parsed.data);
    const { page } = pageWindow(c.req.query(), new Date());
    return c.redirect(`/portal/costs?${page.query}&done=currency`, 303);
  });
  return costs;
}

/**
 * The page's window: `window=month` with `month=YYYY-MM` (default: this
 * month), or `window=custom` with `from` and `to` as days, `to` included. A
 * bad window falls back to this month, with the reason.
 */
function pageWindow(
  query: Record<string, string>,
  now: Date,
): { window: CostWindow; page: CostsPageWindow; error?: string } {
  const thisMonth = now.toISOString().slice(0, 7);
  const ofMonth = (month: string) => {
    const window = monthWindow(month);
    return {
      window,
      page: {
        kind: 'month' as const,
        month,
        fromDay: day(window.from),
        toDay: day(new Date(window.to.getTime() - DAY_MS)),
        query: `window=month&month=${month}`,
      },
    };
  };
  const fallback = (error: string) => ({ ...ofMonth(thisMonth), error: `${error} Showing this month.` });
  if (query.window !== 'custom') {
    const month = query.month ?? thisMonth;
    return isReportMonth(month) ? ofMonth(month) : fallback('Choose a month, January 1970 or later.');
  }
  const fromDay = query.from ?? '';
  const toDay = query.to ?? '';
  if (!/^\d{4}-\d\d-\d\d$/.test(fromDay) || !/^\d{4}-\d\d-\d\d$/.test(toDay))
    return fallback('Give both days as YYYY-MM-DD.');
  const last = Date.parse(`${toDay}T00:00:00Z`);
  let window: CostWindow;
  try {
    window = parseWindow({ from: fromDay, to: Number.isNaN(last) ? toDay : day(new Date(last + DAY_MS)) }, now);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return fallback(`${(error.details ?? []).map((d) => d.message).join(' ')}`);
  }
  return {
    window,
    page: {
      kind: 'custom',
      month: fromDay.slice(0, 7),
      fromDay,
      toDay,
      query: `window=custom&from=${fromDay}&to=${toDay}`,
    },
  };
}

function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}
