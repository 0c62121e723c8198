import { formatAmount } from '../../gateway/billing/money.js';
import type { UsageGroup, UsageTotals } from '../../gateway/billing/usage-reports.js';
import type { UsageRecord } from '../../gateway/billing/usage-requests.js';
import { Notice, Page, When } from './layout.js';
import type { Viewer } from './layout.js';
import { DayChart, type DayValue } from './chart.js';
import { type UsageWindow, WindowForm } from './window.js';

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

/**
 * Usage of a window: a chart by day, tables by key, model and project, and the requests, newest
 * first.
 */
export function UsagePage(view: UsageView) {
  const { viewer, window, totals, currency } = view;
  const lastDay = new Date(window.to.getTime() - 86_400_000);
  return (
    <Page title="Usage" user={viewer} current="usage">
      <h1>Usage</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      <WindowForm action="/portal/usage" window={window} />
      <p>
        <strong>
          {day(window.from)} to {day(lastDay)}:
        </strong>{' '}
        {count(totals.requests)} {totals.requests === 1 ? 'request' : 'requests'},{' '}
        {count(totals.promptTokens + totals.completionTokens)} tokens
        {totals.cachedTokens > 0 &&
          ` (${count(totals.cachedTokens)} of the prompts' read from the engines' cache)`}, {formatAmount(totals.cost)}{' '}
        {currency}.{' '}
        <a href={`/portal/usage.csv?${window.query}`} download>
          Download the requests as CSV
        </a>
      </p>
      <div class="charts">
        <DayChart
          title={`Cost by day (${currency})`}
          caption="What the requests of each UTC day cost."
          window={window}
          days={dayValues(view.days, (g) => g.cost)}
          format={formatAmount}
        />
        <DayChart
          title="Tokens by day"
          caption="Prompt and completion tokens of each UTC day."
          window={window}
          days={dayValues(view.days, (g) => BigInt(g.promptTokens + g.completionTokens))}
          format={(v) => count(Number(v))}
        />
      </div>
      <GroupTable
        title="By key"
        groups={view.byKey}
        label={(g) => (g.by === 'key' ? (g.keyName ?? g.keyId) : '')}
        currency={currency}
      />
      <GroupTable
        title="By model"
        groups={view.byModel}
        label={(g) => (g.by === 'model' ? g.model : '')}
        currency={currency}
      />
      <GroupTable
        title="By project"
        groups={view.byProject}
        label={(g) =>
          g.by === 'project' ? (g.projectId ? (view.projectNames.get(g.projectId) ?? g.projectId) : 'none') : ''
        }
        currency={currency}
      />
      <h2>Requests</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Time (UTC)</th>
              <th scope="col" class="fold">
                Request
              </th>
              <th scope="col">Key</th>
              <th scope="col" class="fold">
                Project
              </th>
              <th scope="col">Model</th>
              <th scope="col" class="fold" title="The batch the request was a line of">
                Batch
              </th>
              <th scope="col">Status</th>
              <th scope="col" class="num fold">
                Prompt
              </th>
              <th scope="col" class="num fold" title="Of the prompt, the tokens read from the engine's prefix cache">
                Cached
              </th>
              <th scope="col" class="num fold">
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
                <td class="when">
                  <When at={record.createdAt} seconds />
                </td>
                <td class="fold id">
                  <code>{record.id}</code>
                </td>
                <td class="name">{view.keyNames.get(record.keyId) ?? record.keyId}</td>
                <td class="fold">
                  {record.projectId ? (view.projectNames.get(record.projectId) ?? record.projectId) : '—'}
                </td>
                <td>{record.modelId}</td>
                <td class="fold id">{record.batchId ? <code>{record.batchId}</code> : '—'}</td>
                <td>{record.status}</td>
                <td class="num fold">{count(record.promptTokens)}</td>
                <td class="num fold">{count(record.cachedTokens)}</td>
                <td class="num fold">{count(record.completionTokens)}</td>
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

/** A chart's days from the usage groups by day. */
export function dayValues(days: UsageGroup[], value: (g: UsageGroup) => bigint): DayValue[] {
  return days.map((group) => ({ date: group.by === 'day' ? group.date : '', value: value(group) }));
}

function GroupTable({
  title,
  groups,
  label,
  currency,
}: {
  title: string;
  groups: UsageGroup[];
  label: (g: UsageGroup) => string;
  currency: string;
}) {
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
                <th scope="col" class="num fold">
                  Prompt tokens
                </th>
                <th scope="col" class="num fold" title="Of the prompt, the tokens read from the engine's prefix cache">
                  Cached
                </th>
                <th scope="col" class="num fold">
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
                  <td class="num fold">{count(group.promptTokens)}</td>
                  <td class="num fold">{count(group.cachedTokens)}</td>
                  <td class="num fold">{count(group.completionTokens)}</td>
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
