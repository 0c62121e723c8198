import { formatAmount } from '../../gateway/billing/money.js';
import type { UsageGroup, UsageTotals } from '../../gateway/billing/usage-reports.js';
import { DayChart } from './chart.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';
import { dayValues } from './usage-pages.js';
import { type UsageWindow, WindowForm } from './window.js';

/** The live key that has used the largest share of its monthly token limit. */
export interface NearestKey {
  id: string;
  name: string;
  used: number;
  limit: number;
}

export interface OverviewView {
  viewer: Viewer;
  window: UsageWindow;
  error?: string;
  /** The chart's selector: '' (everything), `key:<id>` or `model:<id>`. */
  show: string;
  balance: bigint;
  thisMonth: UsageTotals;
  lastMonth: UsageTotals;
  days: UsageGroup[];
  keyChoices: Array<{ id: string; name: string }>;
  modelChoices: string[];
  lastHour: { requests: number; errors: number };
  nearest: NearestKey | null;
  currency: string;
}

const count = (n: number) => n.toLocaleString('en-US');
const plural = (n: number, one: string, many: string) => `${count(n)} ${n === 1 ? one : many}`;

/** Money and activity at a glance, with links to the pages that hold the detail. */
export function OverviewPage(view: OverviewView) {
  const { currency, window } = view;
  const shown = chartSubject(view);
  return (
    <Page title="Overview" user={view.viewer} current="overview">
      <h1>Overview</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      <div class="panel figures">
        <div>
          <p class="muted">Balance</p>
          <p class="figure" id="figure-balance">
            {formatAmount(view.balance)} {currency}
          </p>
          <p class="figure-note">
            <a href="/portal/wallet">Wallet and ledger</a>
          </p>
        </div>
        <div>
          <p class="muted">Spent this month</p>
          <p class="figure" id="figure-this-month">
            {formatAmount(view.thisMonth.cost)} {currency}
          </p>
          <p class="figure-note muted">{plural(view.thisMonth.requests, 'request', 'requests')}</p>
        </div>
        <div>
          <p class="muted">Spent last month</p>
          <p class="figure" id="figure-last-month">
            {formatAmount(view.lastMonth.cost)} {currency}
          </p>
          <p class="figure-note muted">{plural(view.lastMonth.requests, 'request', 'requests')}</p>
        </div>
        <div>
          <p class="muted">Last hour</p>
          <p class="figure" id="figure-last-hour">
            {plural(view.lastHour.requests, 'request', 'requests')}
          </p>
          <p class={`figure-note ${view.lastHour.errors > 0 ? 'flag' : 'muted'}`}>
            {plural(view.lastHour.errors, 'error', 'errors')}
          </p>
        </div>
        <div>
          <p class="muted">Key nearest its monthly limit</p>
          {view.nearest ? (
            <>
              <p class="figure">{view.nearest.name}</p>
              <p class="figure-note">
                {count(view.nearest.used)} of {count(view.nearest.limit)} tokens this month.{' '}
                <a href={`/portal/keys/${view.nearest.id}/edit`}>Change its limits</a>
              </p>
            </>
          ) : (
            <p class="figure-note muted">
              No live key has a monthly token limit. <a href="/portal/keys">API keys</a>
            </p>
          )}
        </div>
      </div>
      <p class="muted">
        Amounts are in {currency}, the gateway's currency: your wallet is topped up and charged in it. Token spend is
        here and on <a href="/portal/usage">Usage</a>; hardware node-hours of clusters are on{' '}
        <a href="/portal/costs">Costs</a>.
      </p>
      <h2>Spend and tokens by day</h2>
      <WindowForm action="/portal/overview" window={window}>
        <div>
          <label for="show">Keys and models</label>
          <select id="show" name="show">
            <option value="">All keys and models</option>
            <optgroup label="One key">
              {view.keyChoices.map((key) => (
                <option value={`key:${key.id}`} selected={view.show === `key:${key.id}`}>
                  {key.name}
                </option>
              ))}
            </optgroup>
            <optgroup label="One model">
              {view.modelChoices.map((model) => (
                <option value={`model:${model}`} selected={view.show === `model:${model}`}>
                  {model}
                </option>
              ))}
            </optgroup>
          </select>
        </div>
      </WindowForm>
      <div class="charts">
        <DayChart
          title={`Spend by day (${currency})`}
          caption={`What ${shown} cost on each UTC day.`}
          window={window}
          days={dayValues(view.days, (g) => g.cost)}
          format={formatAmount}
        />
        <DayChart
          title="Tokens by day"
          caption={`Prompt and completion tokens of ${shown} on each UTC day.`}
          window={window}
          days={dayValues(view.days, (g) => BigInt(g.promptTokens + g.completionTokens))}
          format={(v) => count(Number(v))}
        />
      </div>
      <p>
        More: <a href={`/portal/usage?${window.query}`}>usage of this window</a> by key, model and project, with every
        request; the <a href="/portal/wallet">wallet</a>
        's ledger; <a href="/portal/keys">API keys</a> and their limits.
      </p>
    </Page>
  );
}

/** What the charts show, in words: every request, or one key's or one model's. */
function chartSubject({ show, keyChoices }: OverviewView): string {
  if (show.startsWith('key:'))
    return `the key “${keyChoices.find((key) => `key:${key.id}` === show)?.name ?? show.slice(4)}”`;
  if (show.startsWith('model:')) return `the requests to ${show.slice(6)}`;
  return 'all requests';
}
