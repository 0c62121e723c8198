import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { LEDGER_KINDS, type LedgerKind } from '../../shared/db/schema.js';
import { dayValues } from './usage-pages.js';
import { type LedgerFilters, WalletPage } from './wallet-pages.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';
import { dateOf, readWindow } from './window.js';
import { chargesWritten } from '../fresh-charges.js';

const LEDGER_PAGE = 50;
const DAY_MS = 86_400_000;

/**
 * The wallet (`/portal/wallet`): the balance, what requests in flight hold,
 * the top-ups, this month's spend by day, and the whole ledger a page at a
 * time (`before=<entry id>`), narrowed by key, kind or UTC day.
 *
 * @example
 * portal.route('/wallet', walletRoutes(deps, session));
 */
export function walletRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const wallet = new Hono<GatewayEnv>();
  wallet.get('/', chargesWritten(deps.applier), async (c) => {
    const actor = await session.signedIn(c);
    const orgId = actor.orgId;
    const { filters, error } = ledgerFilters(c.req.query());
    const before = /^\d{1,15}$/.test(c.req.query('before') ?? '') ? Number(c.req.query('before')) : undefined;
    const day = dateOf(filters.day);
    const month = readWindow({ window: 'this-month' }).window;
    const [balance, state, topups, page, keys, days] = await Promise.all([
      deps.wallets.balance(orgId),
      deps.gateKeeper.gate.walletState(orgId),
      deps.wallets.ledgerPage(orgId, { limit: 5, kind: 'topup' }),
      deps.wallets.ledgerPage(orgId, {
        limit: LEDGER_PAGE,
        before,
        keyId: filters.key || undefined,
        kind: filters.kind || undefined,
        from: day ?? undefined,
        to: day ? new Date(day.getTime() + DAY_MS) : undefined,
      }),
      deps.keys.list(orgId),
      deps.usageReports.groups({ orgId, from: month.from, to: month.to }, 'day'),
    ]);
    const query = (next: number) => new URLSearchParams({ ...filters, before: String(next) }).toString();
    return c.html(
      <WalletPage
        viewer={session.viewerOf(actor)}
        balance={balance}
        held={state.holds.reduce((sum, hold) => sum + hold.amount, 0n)}
        topups={topups.entries}
        ledger={page.entries}
        filters={filters}
        olderHref={page.next === null ? null : `/portal/wallet?${query(page.next)}#ledger`}
        deeper={before !== undefined}
        keys={keys.map((key) => ({ id: key.id, name: key.name }))}
        month={month}
        spendDays={dayValues(days, (g) => g.cost)}
        currency={deps.config.currency}
        error={error}
      />,
    );
  });
  return wallet;
}

/** The ledger's filters from the query; one that is not well formed is dropped, with the reason. */
function ledgerFilters(query: Record<string, string>): { filters: LedgerFilters; error?: string } {
  const errors: string[] = [];
  const key = query.key ?? '';
  const kind = query.kind ?? '';
  const day = query.day ?? '';
  const filters: LedgerFilters = { key: '', kind: '', day: '' };
  if (/^[\x21-\x7e]{1,200}$/.test(key)) filters.key = key;
  else if (key) errors.push('That is not a key id.');
  if ((LEDGER_KINDS as readonly string[]).includes(kind)) filters.kind = kind as LedgerKind;
  else if (kind) errors.push('That is not a kind of ledger entry.');
  if (dateOf(day)) filters.day = day;
  else if (day) errors.push('Give the day as YYYY-MM-DD.');
  return { filters, error: errors.length ? `${errors.join(' ')} Showing every entry for it.` : undefined };
}
