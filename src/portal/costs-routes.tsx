import type { Context, Hono } from 'hono';
import { currencies, currencyCode } from '../costs/currencies.js';
import { costsCsv, csvFileName } from '../costs/csv.js';
import { type CostWindow, monthWindow, parseWindow } from '../costs/window.js';
import type { GatewayEnv, SignedInActor } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import type { Services } from '../services.js';
import { type CostsPageWindow, CostsPage } from './costs-page.js';
import type { Viewer } from './pages.js';

export interface CostPagesDeps {
  services: Services;
  signedIn(c: Context<GatewayEnv>): Promise<SignedInActor>;
  viewerOf(actor: SignedInActor): Viewer;
  /** Throws unless `token` is the session's form token. */
  checkToken(actor: SignedInActor, token: unknown): void;
}

const DAY_MS = 86_400_000;

/**
 * The portal's costs page (`/portal/costs`), its CSV (`/portal/costs.csv`)
 * and the billing currency switch (`POST /portal/costs/currency`, owners and
 * admins, with the session's form token). Users see their organization;
 * platform admins every organization with usage.
 *
 * @example
 * registerCostPages(portal, { services, signedIn, viewerOf, checkToken });
 */
export function registerCostPages(portal: Hono<GatewayEnv>, deps: CostPagesDeps): void {
  const { services } = deps;
  const reportOf = (actor: SignedInActor, window: CostWindow, now: Date) => services.costs.report({ orgId: actor.platformAdmin ? null : actor.orgId }, window, now);
  const manages = (actor: SignedInActor) => actor.role !== 'member' || actor.platformAdmin;

  portal.get('/costs', async (c) => {
    const actor = await deps.signedIn(c);
    const now = new Date();
    const { window, page, error } = pageWindow(c.req.query(), now);
    const [report, billingCurrency] = await Promise.all([reportOf(actor, window, now), services.costs.billingCurrency(actor.orgId)]);
    const notice = c.req.query('done') === 'currency' ? (billingCurrency ? `Costs are now shown in ${billingCurrency} where a conversion rate is set.` : 'Costs are now shown in each rate card\'s own currency.') : undefined;
    return c.html(
      <CostsPage viewer={deps.viewerOf(actor)} window={page} report={report} billingCurrency={billingCurrency} canSetCurrency={manages(actor)} currencies={[...currencies().values()]} error={error} notice={notice} />,
      error ? 400 : 200,
    );
  });

  portal.get('/costs.csv', async (c) => {
    const actor = await deps.signedIn(c);
    const now = new Date();
    const report = await reportOf(actor, pageWindow(c.req.query(), now).window, now);
    return c.body(costsCsv(report), 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${csvFileName(report)}"` });
  });

  portal.post('/costs/currency', async (c) => {
    const actor = await deps.signedIn(c);
    const form = await c.req.parseBody();
    deps.checkToken(actor, form._csrf);
    if (!manages(actor)) throw new GatewayError('forbidden', "Only the organization's owners and admins set its billing currency.");
    const chosen = typeof form.currency === 'string' ? form.currency : '';
    const parsed = currencyCode.nullable().safeParse(chosen === '' ? null : chosen);
    if (!parsed.success) throw new GatewayError('invalid_request', 'Choose a currency from the list.');
    await services.costs.setBillingCurrency(actor.orgId, parsed.data);
    const { page } = pageWindow(c.req.query(), new Date());
    return c.redirect(`/portal/costs?${page.query}&done=currency`, 303);
  });
}

/**
 * The page's window: `window=month` with `month=YYYY-MM` (default: this
 * month), or `window=custom` with `from` and `to` as days, `to` included. A
 * bad window falls back to this month, with the reason.
 */
export function pageWindow(query: Record<string, string>, now: Date): { window: CostWindow; page: CostsPageWindow; error?: string } {
  const thisMonth = now.toISOString().slice(0, 7);
  const ofMonth = (month: string) => {
    const window = monthWindow(month);
    return { window, page: { kind: 'month' as const, month, fromDay: day(window.from), toDay: day(new Date(window.to.getTime() - DAY_MS)), query: `window=month&month=${month}` } };
  };
  const fallback = (error: string) => ({ ...ofMonth(thisMonth), error: `${error} Showing this month.` });
  if (query.window !== 'custom') {
    const month = query.month ?? thisMonth;
    return /^\d{4}-(0[1-9]|1[0-2])$/.test(month) ? ofMonth(month) : fallback('Choose a month.');
  }
  const fromDay = query.from ?? '';
  const toDay = query.to ?? '';
  if (!/^\d{4}-\d\d-\d\d$/.test(fromDay) || !/^\d{4}-\d\d-\d\d$/.test(toDay)) return fallback('Give both days as YYYY-MM-DD.');
  const last = Date.parse(`${toDay}T00:00:00Z`);
  let window: CostWindow;
  try {
    window = parseWindow({ from: fromDay, to: Number.isNaN(last) ? toDay : day(new Date(last + DAY_MS)) }, now);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return fallback(`${(error.details ?? []).map((d) => d.message).join(' ')}`);
  }
  return { window, page: { kind: 'custom', month: fromDay.slice(0, 7), fromDay, toDay, query: `window=custom&from=${fromDay}&to=${toDay}` } };
}

function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}
