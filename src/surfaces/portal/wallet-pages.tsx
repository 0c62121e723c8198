import { formatAmount } from '../../gateway/billing/money.js';
import type { LedgerEntry } from '../../gateway/billing/ledger-entries.js';
import { LEDGER_KINDS, type LedgerKind } from '../../shared/db/schema.js';
import { DayChart, type DayValue } from './chart.js';
import { Notice, Page, When } from './layout.js';
import type { Viewer } from './layout.js';
import type { UsageWindow } from './window.js';

/** The ledger's filters as the form names them: empty when not narrowed. */
export interface LedgerFilters {
  key: string;
  kind: LedgerKind | '';
  day: string;
}

export interface WalletView {
  viewer: Viewer;
  balance: bigint;
  held: bigint;
  topups: LedgerEntry[];
  ledger: LedgerEntry[];
  filters: LedgerFilters;
  /** The link to the next (older) page of the ledger, and whether this is not the first page. */
  olderHref: string | null;
  deeper: boolean;
  keys: Array<{ id: string; name: string }>;
  month: UsageWindow;
  spendDays: DayValue[];
  currency: string;
  error?: string;
}

const KIND_LABELS: Record<LedgerKind, string> = {
  topup: 'Top-up',
  charge: 'Charge',
  refund: 'Refund',
  adjustment: 'Adjustment',
};

/**
 * Balance, held amount, the top-ups, this month's spend by day, and the ledger a page at a time
 * with filters.
 */
export function WalletPage(view: WalletView) {
  const { currency, filters } = view;
  return (
    <Page title="Wallet" user={view.viewer} current="wallet">
      <h1>Wallet</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      <div class="panel figures">
        <div>
          <p class="muted">Balance</p>
          <p class="figure" id="wallet-balance">
            {formatAmount(view.balance)} {currency}
          </p>
        </div>
        <div>
          <p class="muted">Held by requests in flight</p>
          <p class="figure">
            {formatAmount(view.held)} {currency}
          </p>
        </div>
      </div>
      <p class="muted">
        The wallet is in {currency}, the gateway's currency: top-ups are credited and requests charged in it, by the
        tokens they use (see <a href="/portal/usage">Usage</a>). Top-ups are made by the operator. Each request holds
        the most it can cost while it runs, and is charged what it used when it ends. Hardware node-hours of clusters
        are billed apart, on <a href="/portal/costs">Costs</a>.
      </p>
      <DayChart
        title={`Spend by day this month (${currency})`}
        caption="What the requests of each UTC day of this month cost."
        window={view.month}
        days={view.spendDays}
        format={formatAmount}
      />
      <h2>Top-ups</h2>
      {view.topups.length === 0 ? (
        <p class="muted">No top-up yet.</p>
      ) : (
        <LedgerTable entries={view.topups} currency={currency} label="Latest top-ups" />
      )}
      <h2 id="ledger">Ledger</h2>
      <form method="get" action="/portal/wallet#ledger" class="panel actions filters">
        <div>
          <label for="key">Key</label>
          <select id="key" name="key">
            <option value="">Every entry</option>
            {view.keys.map((key) => (
              <option value={key.id} selected={filters.key === key.id}>
                {key.name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="kind">Kind</label>
          <select id="kind" name="kind">
            <option value="">Every kind</option>
            {LEDGER_KINDS.map((kind) => (
              <option value={kind} selected={filters.kind === kind}>
                {KIND_LABELS[kind]}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="day">Day (UTC)</label>
          <input id="day" name="day" type="date" value={filters.day} />
        </div>
        <div>
          <button type="submit">Filter</button>
        </div>
      </form>
      <LedgerTable entries={view.ledger} currency={currency} label="Ledger, newest first" />
      {view.ledger.length === 0 && (
        <p class="muted">
          {filters.key || filters.kind || filters.day
            ? 'No entry matches these filters.'
            : 'Nothing in the ledger yet.'}
        </p>
      )}
      <p class="actions">
        {view.deeper && (
          <a href={`/portal/wallet?${new URLSearchParams({ ...filters }).toString()}#ledger`}>Newest entries</a>
        )}
        {view.olderHref ? (
          <a href={view.olderHref}>Older entries</a>
        ) : (
          view.ledger.length > 0 && <span class="muted">This is the oldest entry.</span>
        )}
      </p>
    </Page>
  );
}

/**
 * Ledger entries: time, kind and amount always; the balance after and the request or note fold away
 * on a narrow screen.
 */
export function LedgerTable({ entries, currency, label }: { entries: LedgerEntry[]; currency: string; label: string }) {
  return (
    <div class="table-wrap" tabindex={0} role="region" aria-label={`${label} (scrolls sideways on a narrow screen)`}>
      <table>
        <thead>
          <tr>
            <th scope="col">Time (UTC)</th>
            <th scope="col">Kind</th>
            <th scope="col" class="num">
              Amount ({currency})
            </th>
            <th scope="col" class="num fold">
              Balance after
            </th>
            <th scope="col">Request or note</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr>
              <td class="when">
                <When at={entry.createdAt} />
              </td>
              <td>{KIND_LABELS[entry.kind]}</td>
              <td class="num">{formatAmount(entry.amount)}</td>
              <td class="num fold">{formatAmount(entry.balanceAfter)}</td>
              <td class="wrap">{entry.requestId ? <code>{entry.requestId}</code> : (entry.note ?? '')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
