import { formatAmount } from '../../gateway/billing/money.js';
import type { BudgetReport } from '../../gateway/billing/budgets.js';
import { Notice, Page, type Viewer, When } from './layout.js';

/** What the budget page is about: a key or a project, by name, and where its own page is. */
export interface BudgetSubject {
  scope: 'key' | 'project';
  id: string;
  name: string;
  back: string;
}

const amount = (nanos: bigint | null) => (nanos === null ? '' : formatAmount(nanos));

/**
 * A key's or a project's budget: each window's budget, what it spent and when it resets; owners get
 * the form.
 */
export function BudgetPage(props: {
  viewer: Viewer;
  subject: BudgetSubject;
  report: BudgetReport;
  currency: string;
  canSet: boolean;
  notice?: string;
  error?: string;
}) {
  const { viewer, subject, report, currency } = props;
  const current = subject.scope === 'key' ? 'keys' : 'projects';
  return (
    <Page title={`Budget of ${subject.name}`} user={viewer} current={current}>
      <h1>Budget of “{subject.name}”</h1>
      {props.notice && <Notice kind="ok">{props.notice}</Notice>}
      {props.error && <Notice kind="error">{props.error}</Notice>}
      <p>
        A request is admitted only if the most it can cost fits in what is left of this {subject.scope}'s budget, with
        the requests in flight. Amounts in {currency}; spend is the charges written so far.
      </p>
      <div
        class="table-wrap"
        tabindex={0}
        role="region"
        aria-label="Budget and spend (scrolls sideways on a narrow screen)"
      >
        <table>
          <thead>
            <tr>
              <th scope="col">window</th>
              <th scope="col">budget</th>
              <th scope="col">spent</th>
              <th scope="col">resets (UTC)</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td>this month</td>
              <td>{amount(report.budgets.monthly) || 'none'}</td>
              <td>{formatAmount(report.month.spent)}</td>
              <td>
                <When at={report.month.resetsAt} />
              </td>
            </tr>
            <tr>
              <td>today</td>
              <td>{amount(report.budgets.daily) || 'none'}</td>
              <td>{formatAmount(report.day.spent)}</td>
              <td>
                <When at={report.day.resetsAt} />
              </td>
            </tr>
          </tbody>
        </table>
      </div>
      {props.canSet ? (
        <form method="post" action={`/portal/budgets/${subject.scope}/${subject.id}`} class="panel">
          <input type="hidden" name="_csrf" value={viewer.csrf} />
          <div class="grid">
            <div>
              <label for="monthly">Monthly budget ({currency}, empty for none)</label>
              <input id="monthly" name="monthly" inputmode="decimal" value={amount(report.budgets.monthly)} />
            </div>
            <div>
              <label for="daily">Daily budget ({currency}, empty for none)</label>
              <input id="daily" name="daily" inputmode="decimal" value={amount(report.budgets.daily)} />
            </div>
          </div>
          <div class="actions">
            <button type="submit">Save budget</button>
            <a href={subject.back}>Back</a>
          </div>
        </form>
      ) : (
        <p class="muted">Only the organization's owners set budgets.</p>
      )}
    </Page>
  );
}
