import { formatAmount } from '../../gateway/billing/money.js';
import type { UsageGroup, UsageRecord, UsageTotals } from '../../gateway/billing/reports.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './pages.js';

/** The window a usage page shows: [from, to), and how the form names it. */
export interface UsageWindow {
  kind: 'this-month' | 'last-month' | 'custom';
  from: Date;
  to: Date;
  /** The query string that selects this window again (for links and the CSV). */
  query: string;
}

export interface UsageView {
  viewer: Viewer;
  window: UsageWindow;
  error?: string;
  totals: UsageTotals;
  days: UsageGroup[];
  byKey: UsageGroup[];
  byModel: UsageGroup[];
  byProject: UsageGroup[];
  records: UsageRecord[];
  keyNames: Map<string, string>;
  projectNames: Map<string, string>;
  /** The link to the next (older) page of requests, if there is one. */
  olderHref: string | null;
  currency: string;
}

const day = (at: Date) => at.toISOString().slice(0, 10);
const count = (n: number) => n.toLocaleString('en-US');

/** Usage of a window: a chart by day, tables by key, model and project, and the requests, newest first. */
export function UsagePage(view: UsageView) {
  const { viewer, window, totals, currency } = view;
  const lastDay = new Date(window.to.getTime() - 86_400_000);
  return (
    <Page title="Usage" user={viewer} current="usage">
      <h1>Usage</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      <form method="get" action="/portal/usage" class="panel actions">
        <div>
          <label for="window">Window</label>
          <select id="window" name="window">
            <option value="this-month" selected={window.kind === 'this-month'}>
              This month
            </option>
            <option value="last-month" selected={window.kind === 'last-month'}>
              Last month
            </option>
            <option value="custom" selected={window.kind === 'custom'}>
              From – to (below)
            </option>
          </select>
        </div>
        <div>
          <label for="from">From (UTC)</label>
          <input id="from" name="from" type="date" value={day(window.from)} />
        </div>
        <div>
          <label for="to">To, included (UTC)</label>
          <input id="to" name="to" type="date" value={day(lastDay)} />
        </div>
        <div>
          <button type="submit">Show</button>
        </div>
      </form>
      <p>
        <strong>
          {day(window.from)} to {day(lastDay)}:
        </strong>{' '}
        {count(totals.requests)} {totals.requests === 1 ? 'request' : 'requests'}, {count(totals.promptTokens + totals.completionTokens)} tokens, {formatAmount(totals.cost)} {currency}.{' '}
        <a href={`/portal/usage.csv?${window.query}`} download>
          Download the requests as CSV
        </a>
      </p>
      <div class="charts">
        <DayChart title={`Cost by day (${currency})`} window={window} days={view.days} value={(g) => g.cost} format={(v) => formatAmount(v)} />
        <DayChart title="Tokens by day" window={window} days={view.days} value={(g) => BigInt(g.promptTokens + g.completionTokens)} format={(v) => count(Number(v))} />
      </div>
      <GroupTable title="By key" groups={view.byKey} label={(g) => (g.by === 'key' ? (g.keyName ?? g.keyId) : '')} currency={currency} />
      <GroupTable title="By model" groups={view.byModel} label={(g) => (g.by === 'model' ? g.model : '')} currency={currency} />
      <GroupTable
        title="By project"
        groups={view.byProject}
        label={(g) => (g.by === 'project' ? (g.projectId ? (view.projectNames.get(g.projectId) ?? g.projectId) : 'none') : '')}
        currency={currency}
      />
      <h2>Requests</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Time (UTC)</th>
              <th scope="col">Request</th>
              <th scope="col">Key</th>
              <th scope="col">Project</th>
              <th scope="col">Model</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Prompt
              </th>
              <th scope="col" class="num">
                Completion
              </th>
              <th scope="col" class="num">
                Cost ({currency})
              </th>
            </tr>
          </thead>
          <tbody>
            {view.records.map((record) => (
              <tr>
                <td>{record.createdAt.toISOString().slice(0, 19).replace('T', ' ')}</td>
                <td>
                  <code>{record.id}</code>
                </td>
                <td>{view.keyNames.get(record.keyId) ?? record.keyId}</td>
                <td>{record.projectId ? (view.projectNames.get(record.projectId) ?? record.projectId) : '—'}</td>
                <td>{record.modelId}</td>
                <td>{record.status}</td>
                <td class="num">{count(record.promptTokens)}</td>
                <td class="num">{count(record.completionTokens)}</td>
                <td class="num">{formatAmount(record.cost)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {view.records.length === 0 && <p class="muted">No requests in this window.</p>}
      {view.olderHref && (
        <p>
          <a href={view.olderHref}>Older requests</a>
        </p>
      )}
    </Page>
  );
}

/** Bars by day, every day of the window (days without usage are empty), drawn on the server as SVG: no script, and the figures are in the tables and the CSV too. */
function DayChart({ title, window, days, value, format }: { title: string; window: UsageWindow; days: UsageGroup[]; value: (g: UsageGroup) => bigint; format: (v: bigint) => string }) {
  const byDate = new Map(days.map((group) => [group.by === 'day' ? group.date : '', value(group)]));
  const dates: string[] = [];
  for (let at = window.from.getTime(); at < window.to.getTime(); at += 86_400_000) dates.push(day(new Date(at)));
  // Exact (bigint) values; only the bars' heights are fractions.
  const values = dates.map((date) => byDate.get(date) ?? 0n);
  const max = values.reduce((a, b) => (b > a ? b : a), 0n);
  const width = 600;
  const height = 150;
  const slot = width / Math.max(1, dates.length);
  const summary = max === 0n ? `${title}: no usage.` : `${title}: ${days.length} ${days.length === 1 ? 'day' : 'days'} with usage, highest ${format(max)}.`;
  return (
    <figure class="panel chart">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={summary} preserveAspectRatio="none">
        <line x1="0" y1={String(height - 0.5)} x2={String(width)} y2={String(height - 0.5)} stroke="#9aa3b2" stroke-width="1" />
        {values.map((v, index) =>
          v === 0n ? null : (
            <rect
              x={String(index * slot + slot * 0.15)}
              y={String(height - Math.max(1, (Number((v * 1000n) / max) / 1000) * (height - 5)))}
              width={String(slot * 0.7)}
              height={String(Math.max(1, (Number((v * 1000n) / max) / 1000) * (height - 5)))}
              fill="#1f5fbf"
            >
              <title>{`${dates[index]}: ${format(v)}`}</title>
            </rect>
          ),
        )}
      </svg>
      <p class="muted chart-axis">
        <span>{dates[0]}</span> <span>{max > 0n ? `highest day: ${format(max)}` : 'no usage'}</span> <span>{dates.at(-1)}</span>
      </p>
    </figure>
  );
}

function GroupTable({ title, groups, label, currency }: { title: string; groups: UsageGroup[]; label: (g: UsageGroup) => string; currency: string }) {
  return (
    <>
      <h2>{title}</h2>
      {groups.length === 0 ? (
        <p class="muted">No usage in this window.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
          <table>
            <thead>
              <tr>
                <th scope="col">{title.replace('By ', '').replace(/^./, (c) => c.toUpperCase())}</th>
                <th scope="col" class="num">
                  Requests
                </th>
                <th scope="col" class="num">
                  Prompt tokens
                </th>
                <th scope="col" class="num">
                  Completion tokens
                </th>
                <th scope="col" class="num">
                  Cost ({currency})
                </th>
              </tr>
            </thead>
            <tbody>
              {groups.map((group) => (
                <tr>
                  <td>{label(group)}</td>
                  <td class="num">{count(group.requests)}</td>
                  <td class="num">{count(group.promptTokens)}</td>
                  <td class="num">{count(group.completionTokens)}</td>
                  <td class="num">{formatAmount(group.cost)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
