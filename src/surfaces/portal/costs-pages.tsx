import type { CurrencyInfo } from '../../platform/costs/currencies.js';
import type { CostLineItem, CostReport, OrgCosts, Totals } from '../../platform/costs/report.js';
import { EARLIEST_YEAR } from '../../platform/costs/window.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';
import { MONTH_WINDOWS, WindowForm, type WindowFields } from './window.js';

/** The window a costs page shows, as its form (the portal's one `WindowForm`) names it. */
export interface CostsPageWindow extends WindowFields {
  kind: 'month' | 'custom';
  /** `YYYY-MM` (for the month picker: the window's month, or the month it starts in). */
  month: string;
  /** The query string that selects this window again (for the CSV link and after a change). */
  query: string;
}

export interface CostsView {
  viewer: Viewer;
  window: CostsPageWindow;
  report: CostReport;
  /**
   * The viewer's organization's billing currency, and whether they may change it (owners and
   * admins).
   */
  billingCurrency: string | null;
  canSetCurrency: boolean;
  currencies: readonly CurrencyInfo[];
  error?: string;
  notice?: string;
}

const amounts = (totals: Totals) =>
  totals.amounts.length === 0 ? '—' : totals.amounts.map((a) => `${a.amount} ${a.currency}`).join(' + ');
const instant = (iso: string) => iso.slice(0, 19).replace('T', ' ');

/**
 * The cost report of a window: a month or custom dates, the totals, each
 * organization expandable (a `<details>`, no script) to its clusters' line
 * items, lines left in their native currency flagged in words, the CSV of
 * the same window, and, for owners and admins, the billing currency switch.
 */
export function CostsPage(view: CostsView) {
  const { report, window } = view;
  const skipped = report.organizations
    .flatMap((org) => org.line_items)
    .filter((item) => item.conversion_skipped).length;
  return (
    <Page title="Costs" user={view.viewer} current="costs">
      <h1>Costs</h1>
      <p class="muted" id="costs-about">
        This page is about hardware: the node-hours and GPU-hours of your clusters, priced by the operator's rate cards.
        Each line is in its rate card's currency, converted to your organization's billing currency when one is set
        (below) and a conversion rate exists. What API requests cost in tokens is on <a href="/portal/usage">Usage</a>{' '}
        and charged to the <a href="/portal/wallet">wallet</a>, in the gateway's currency.
      </p>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      {view.notice && <Notice kind="ok">{view.notice}</Notice>}
      <WindowForm action="/portal/costs" window={window} choices={MONTH_WINDOWS} earliestYear={EARLIEST_YEAR} />
      <section class="panel" aria-labelledby="totals">
        <h2 id="totals" class="first">
          {window.fromDay} to {window.toDay}
        </h2>
        <div class="grid">
          <p>
            Total
            <br />
            <strong class="figure">{amounts(report.totals)}</strong>
          </p>
          <p>
            Node-hours
            <br />
            <strong class="figure">{report.totals.node_hours}</strong>
          </p>
          <p>
            GPU-hours
            <br />
            <strong class="figure">{report.totals.gpu_hours}</strong>
          </p>
          <p>
            Unrated hours
            <br />
            <strong class="figure">{report.totals.unrated_hours}</strong>
          </p>
        </div>
        <p class="muted">
          Amounts are exact to the second of use and rounded once per line, half to even, to the currency's minor unit.
          Unrated hours are node-hours no rate card prices.{' '}
          <a href={`/portal/costs.csv?${window.query}`} download>
            Download the line items as CSV
          </a>
        </p>
        {skipped > 0 && (
          <p class="flag">
            ⚠ {skipped} {skipped === 1 ? 'line is' : 'lines are'} not converted to the billing currency: no conversion
            rate was set for {skipped === 1 ? 'its' : 'their'} currency.{' '}
            {skipped === 1 ? 'It keeps its' : 'They keep their'} own currency.
          </p>
        )}
      </section>
      {view.canSetCurrency && <CurrencyForm view={view} />}
      {report.organizations.length === 0 && <p class="muted">No cluster ran in this window.</p>}
      {report.organizations.map((org) => (
        <OrgSection org={org} open={report.organizations.length === 1} />
      ))}
    </Page>
  );
}

function CurrencyForm({ view }: { view: CostsView }) {
  return (
    <form method="post" action={`/portal/costs/currency?${view.window.query}`} class="panel actions">
      <input type="hidden" name="_csrf" value={view.viewer.csrf} />
      <div>
        <label for="currency">Billing currency</label>
        <BillingCurrencySelect billingCurrency={view.billingCurrency} currencies={view.currencies} />
      </div>
      <div>
        <button type="submit">Set billing currency</button>
      </div>
    </form>
  );
}

/** An organization: its totals in the summary, its line items inside. */
function OrgSection({ org, open }: { org: OrgCosts; open: boolean }) {
  return (
    <details class="org panel" open={open}>
      <summary>
        <strong>{org.org_name}</strong>{' '}
        <span class="muted">({org.billing_currency ? `billed in ${org.billing_currency}` : 'native currencies'})</span>:{' '}
        {amounts(org.totals)} · {org.totals.node_hours} node-hours · {org.totals.gpu_hours} GPU-hours
        {org.totals.unrated_seconds > 0 ? ` · ${org.totals.unrated_hours} unrated` : ''}
      </summary>
      {org.line_items.length === 0 ? (
        <p class="muted">No cluster of this organization ran in this window.</p>
      ) : (
        <div
          class="table-wrap"
          tabindex={0}
          role="region"
          aria-label={`Clusters of ${org.org_name} (scrolls sideways on a narrow screen)`}
        >
          <table>
            <thead>
              <tr>
                <th scope="col">Cluster</th>
                <th scope="col">Profile</th>
                <th scope="col" class="num">
                  Node-hours
                </th>
                <th scope="col" class="num">
                  GPU-hours
                </th>
                <th scope="col" class="num">
                  Unrated
                </th>
                <th scope="col" class="num">
                  Amount
                </th>
                <th scope="col">Conversion</th>
                <th scope="col">From – to (UTC)</th>
                <th scope="col">Rate card</th>
              </tr>
            </thead>
            <tbody>
              {org.line_items.map((item) => (
                <LineRow item={item} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </details>
  );
}

function LineRow({ item }: { item: CostLineItem }) {
  return (
    <tr class={item.conversion_skipped ? 'flagged' : undefined}>
      <td>
        {item.conversion_skipped && <span class="flag">⚠ </span>}
        {item.cluster_name}
        {item.cluster_state === 'deleted' && <span class="muted"> (deleted)</span>}
      </td>
      <td>{item.profile}</td>
      <td class="num">{item.node_hours}</td>
      <td class="num">{item.gpu_hours}</td>
      <td class="num">{item.unrated_seconds > 0 ? item.unrated_hours : '—'}</td>
      <td class="num">{item.amount === null ? 'unrated' : `${item.amount} ${item.currency}`}</td>
      <td>
        {item.conversion_skipped ? (
          <strong class="flag">⚠ Not converted: no rate</strong>
        ) : item.conversion ? (
          `from ${item.native_amount} ${item.native_currency} at ${item.conversion.rate} (${item.conversion.effective_on})`
        ) : (
          '—'
        )}
      </td>
      <td>
        {instant(item.charge_period_start)} – {instant(item.charge_period_end)}
      </td>
      <td>
        {item.rate_card
          ? `${item.rate_card.node_hour_price} ${item.rate_card.currency} / node-h + ${item.rate_card.gpu_hour_price} / GPU-h`
          : 'none'}
      </td>
    </tr>
  );
}

/**
 * The billing-currency choice (`name="currency"`): the costs page's own and the operator's
 * organization page share it.
 */
export function BillingCurrencySelect({
  billingCurrency,
  currencies,
}: {
  billingCurrency: string | null;
  currencies: readonly CurrencyInfo[];
}) {
  return (
    <select id="currency" name="currency">
      <option value="" selected={billingCurrency === null}>
        None: each rate card's own currency
      </option>
      {currencies.map((currency) => (
        <option value={currency.code} selected={currency.code === billingCurrency}>
          {`${currency.code} · ${currency.name}`}
        </option>
      ))}
    </select>
  );
}
