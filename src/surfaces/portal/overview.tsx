import { Hono } from 'hono';
import { keyStatus, type KeyRow } from '../../gateway/keys/service.js';
import type { UsageGroup } from '../../gateway/billing/usage-reports.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { type NearestKey, OverviewPage } from './overview-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';
import { readWindow } from './window.js';
import { chargesWritten } from '../fresh-charges.js';

const HOUR_MS = 3_600_000;

/**
 * The overview (`/portal/overview`), where signing in lands: the balance,
 * this month's and last month's spend, spend and tokens by day for a window
 * (all keys and models, or one of either), the last hour's requests and
 * errors, and the key nearest its monthly token limit. Figures come from the
 * usage reports the usage API answers with.
 *
 * @example
 * portal.route('/overview', overviewRoutes(deps, session));
 */
export function overviewRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const overview = new Hono<GatewayEnv>();
  overview.get('/', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    const orgId = actor.orgId;
    const { window, error } = readWindow(c.req.query());
    const thisMonth = readWindow({ window: 'this-month' }).window;
    const lastMonth = readWindow({ window: 'last-month' }).window;
    const show = chartFilter(c.req.query('show'));
    const now = Date.now();
    const scope = { orgId, from: window.from, to: window.to };
    const [balance, spentThisMonth, spentLastMonth, days, keysUsed, modelsUsed, lastHour, monthByKey, keys] =
      await Promise.all([
        deps.wallets.balance(orgId),
        deps.usageReports.totals({ orgId, from: thisMonth.from, to: thisMonth.to }),
        deps.usageReports.totals({ orgId, from: lastMonth.from, to: lastMonth.to }),
        deps.usageReports.groups({ ...scope, ...show.scope }, 'day'),
        deps.usageReports.groups(scope, 'key'),
        deps.usageReports.groups(scope, 'model'),
        deps.usageReports.outcomes({ orgId, from: new Date(now - HOUR_MS), to: new Date(now + 1_000) }),
        deps.usageReports.groups({ orgId, from: thisMonth.from, to: thisMonth.to }, 'key'),
        deps.keys.list(orgId),
      ]);
    return c.html(
      <OverviewPage
        viewer={session.viewerOf(actor)}
        window={window}
        error={error}
        show={show.value}
        balance={balance}
        thisMonth={spentThisMonth}
        lastMonth={spentLastMonth}
        days={days}
        keyChoices={keysUsed.flatMap((g) => (g.by === 'key' ? [{ id: g.keyId, name: g.keyName ?? g.keyId }] : []))}
        modelChoices={modelsUsed.flatMap((g) => (g.by === 'model' ? [g.model] : []))}
        lastHour={lastHour}
        nearest={nearestKey(keys, monthByKey)}
        currency={deps.config.currency}
      />,
    );
  });
  return overview;
}

/**
 * The chart's selector: everything (empty), `key:<id>` or `model:<id>`; anything else is
 * everything.
 */
function chartFilter(text: string | undefined): { value: string; scope: { keyId?: string; model?: string } } {
  const match = /^(key|model):([\x21-\x7e]{1,200})$/.exec(text ?? '');
  if (!match) return { value: '', scope: {} };
  return { value: text!, scope: match[1] === 'key' ? { keyId: match[2] } : { model: match[2] } };
}

/**
 * Of the live keys with a monthly token limit, the one that has used the largest share of it this
 * month.
 */
function nearestKey(keys: KeyRow[], monthByKey: UsageGroup[]): NearestKey | null {
  const used = new Map(monthByKey.map((g) => [g.by === 'key' ? g.keyId : '', g.promptTokens + g.completionTokens]));
  let nearest: NearestKey | null = null;
  for (const key of keys) {
    if (key.monthlyTokens === null || keyStatus(key) !== 'active') continue;
    const tokens = used.get(key.id) ?? 0;
    // Compared as cross products, so no share is a rounded fraction.
    if (!nearest || BigInt(tokens) * BigInt(nearest.limit) > BigInt(nearest.used) * BigInt(key.monthlyTokens))
      nearest = { id: key.id, name: key.name, used: tokens, limit: key.monthlyTokens };
  }
  return nearest;
}
