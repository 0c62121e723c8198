import type { Child } from 'hono/jsx';

/** The window a page shows: [from, to), and how the form names it. */
export interface UsageWindow {
  kind: 'this-month' | 'last-month' | 'custom';
  from: Date;
  to: Date;
  /** The query string that selects this window again (for links and the CSV). */
  query: string;
}

const DAY_MS = 86_400_000;
const MAX_WINDOW_DAYS = 366;
const day = (at: Date) => at.toISOString().slice(0, 10);

/**
 * The window of a page or CSV, from its query: `window=this-month` (default)
 * or `last-month`, or `custom` with `from` and `to` as UTC dates, `to`
 * included, at most 366 days. A bad custom window falls back to this month,
 * with the reason.
 *
 * @example
 * const { window, error } = readWindow(c.req.query());
 */
export function readWindow(query: Record<string, string>, now = new Date()): { window: UsageWindow; error?: string } {
  const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  if (query.window === 'last-month') return { window: { kind: 'last-month', from: month(-1), to: month(0), query: 'window=last-month' } };
  const thisMonth: UsageWindow = { kind: 'this-month', from: month(0), to: month(1), query: 'window=this-month' };
  if (query.window !== 'custom') return { window: thisMonth };
  const from = dateOf(query.from);
  const last = dateOf(query.to);
  if (!from || !last) return { window: thisMonth, error: 'Give both dates as YYYY-MM-DD. Showing this month.' };
  const to = new Date(last.getTime() + DAY_MS);
  if (to <= from) return { window: thisMonth, error: 'The window must end on or after its first day. Showing this month.' };
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * DAY_MS) return { window: thisMonth, error: `A window is at most ${MAX_WINDOW_DAYS} days. Showing this month.` };
  return { window: { kind: 'custom', from, to, query: `window=custom&from=${day(from)}&to=${day(last)}` } };
}

/** A UTC day as `YYYY-MM-DD` text, or null for anything else (a day that does not exist included). */
export function dateOf(text: string | undefined): Date | null {
  if (!text || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const at = new Date(`${text}T00:00:00Z`);
  return Number.isNaN(at.getTime()) || day(at) !== text ? null : at;
}

/**
 * The one time-window form of the portal (usage, overview): this month, last
 * month, or from one UTC day to another; `children` adds a page's own fields
 * (the overview's chart selector).
 */
export function WindowForm({ action, window, children }: { action: string; window: UsageWindow; children?: Child }) {
  const lastDay = new Date(window.to.getTime() - DAY_MS);
  return (
    <form method="get" action={action} class="panel actions filters">
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
      {children}
      <div>
        <button type="submit">Show</button>
      </div>
    </form>
  );
}
