import { formatAmount } from '../../gateway/billing/money.js';
import type { LedgerEntry } from '../../gateway/billing/ledger-entries.js';
import type { CurrencyInfo } from '../../platform/costs/currencies.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';
import { BillingCurrencySelect } from './costs-pages.js';
import { LedgerTable } from './wallet-pages.js';
import { OperatorNav } from './operator-engines-pages.js';

const SCROLLS = '(scrolls sideways on a narrow screen)';

/** Every organization: name, balance and billing currency, each a link to its page. */
export function OperatorOrgsPage({
  viewer,
  orgs,
  currency,
}: {
  viewer: Viewer;
  orgs: Array<{ id: string; name: string; balance: bigint; billingCurrency: string | null }>;
  currency: string;
}) {
  return (
    <Page title="Organizations" user={viewer} current="operator">
      <OperatorNav here="orgs" />
      <h1>Organizations</h1>
      <p class="muted">
        Operator pages: every organization of this gateway. Balances are in {currency}, the gateway's currency, in which
        wallets are topped up and requests charged; the billing currency is what hardware costs are converted to.
      </p>
      <div class="table-wrap" tabindex={0} role="region" aria-label={`Organizations ${SCROLLS}`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" class="num">
                Balance ({currency})
              </th>
              <th scope="col">Billing currency</th>
              <th scope="col" class="fold">
                Id
              </th>
            </tr>
          </thead>
          <tbody>
            {orgs.map((org) => (
              <tr>
                <td class="wrap">
                  <a href={`/portal/operator/orgs/${encodeURIComponent(org.id)}`}>{org.name}</a>
                </td>
                <td class="num">{formatAmount(org.balance)}</td>
                <td>{org.billingCurrency ?? '—'}</td>
                <td class="fold">
                  <code>{org.id}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {orgs.length === 0 && <p class="muted">No organization yet.</p>}
    </Page>
  );
}

export interface OperatorOrgView {
  viewer: Viewer;
  org: { id: string; name: string };
  balance: bigint;
  billingCurrency: string | null;
  ledger: LedgerEntry[];
  currency: string;
  currencies: readonly CurrencyInfo[];
  notice?: string;
  error?: string;
}

/**
 * One organization for the operator: its balance, a top-up with a note, its billing currency, and
 * its latest ledger entries.
 */
export function OperatorOrgPage(view: OperatorOrgView) {
  const { org, currency } = view;
  const action = `/portal/operator/orgs/${encodeURIComponent(org.id)}`;
  return (
    <Page title={org.name} user={view.viewer} current="operator">
      <OperatorNav here="orgs" />
      <h1>{org.name}</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      {view.notice && <Notice kind="ok">{view.notice}</Notice>}
      <div class="panel figures">
        <div>
          <p class="muted">Balance</p>
          <p class="figure" id="org-balance">
            {formatAmount(view.balance)} {currency}
          </p>
        </div>
        <div>
          <p class="muted">Billing currency</p>
          <p class="figure">{view.billingCurrency ?? '—'}</p>
        </div>
        <div>
          <p class="muted">Id</p>
          <p>
            <code>{org.id}</code>
          </p>
        </div>
      </div>
      <h2>Top up</h2>
      <form method="post" action={`${action}/topups`} class="panel">
        <input type="hidden" name="_csrf" value={view.viewer.csrf} />
        <label for="amount">Amount ({currency})</label>
        <input
          id="amount"
          name="amount"
          type="text"
          inputmode="decimal"
          required
          pattern="\d{1,12}(\.\d{1,9})?"
          aria-describedby="amount-hint"
        />
        <p class="hint muted" id="amount-hint">
          A decimal such as 25.00, at most 9 decimal places. It is credited in {currency} and written to the ledger with
          your note.
        </p>
        <label for="note">Note (optional)</label>
        <input id="note" name="note" type="text" maxlength={500} />
        <p>
          <button type="submit">Top up</button>
        </p>
      </form>
      <h2>Billing currency</h2>
      <form method="post" action={`${action}/currency`} class="panel actions filters">
        <input type="hidden" name="_csrf" value={view.viewer.csrf} />
        <div>
          <label for="currency">Hardware costs are shown in</label>
          <BillingCurrencySelect billingCurrency={view.billingCurrency} currencies={view.currencies} />
        </div>
        <div>
          <button type="submit">Set billing currency</button>
        </div>
      </form>
      <h2>Latest ledger entries</h2>
      <LedgerTable entries={view.ledger} currency={currency} label="Latest ledger entries" />
      {view.ledger.length === 0 && <p class="muted">Nothing in the ledger yet.</p>}
    </Page>
  );
}
