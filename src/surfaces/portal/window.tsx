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
  if (query.window === 'last-month')
    return { window: { kind: 'last-month', from: month(-1), to: month(0), query: 'window=last-month' } };
  const thisMonth: UsageWindow = { kind: 'this-month', from: month(0), to: month(1), query: 'window=this-month' };
  if (query.window !== 'custom') return { window: thisMonth };
  const from = dateOf(query.from);
  const last = dateOf(query.to);
  if (!from || !last) return { window: thisMonth, error: 'Give both dates as YYYY-MM-DD. Showing this month.' };
  const to = new Date(last.getTime() + DAY_MS);
  if (to <= from)
    return { window: thisMonth, error: 'The window must end on or after its first day. Showing this month.' };
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * DAY_MS)
    return { window: thisMonth, error: `A window is at most ${MAX_WINDOW_DAYS} days. Showing this month.` };
  return { window: { kind: 'custom', from, to, query: `window=custom&from=${day(from)}&to=${day(last)}` } };
}

/** A UTC day as `YYYY-MM-DD` text, or null for anything else (a day that does not exist included). */
export function dateOf(text: string | undefined): Date | null {
  if (!text || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const at = new Date(`${text}T00:00:00Z`);
  return Number.isNaN(at.getTime()) || day(at) !== text ? null : at;
}

/**
 * What the form shows: the window's kind, its first and last day, and its month on a page that
 * picks months (costs).
 */
export interface WindowFields {
  kind: string;
  /** `YYYY-MM-DD` (UTC), both included. */
  fromDay: string;
  toDay: string;
  /** `YYYY-MM`: given, the form has a month picker. */
  month?: string;
}

/** The windows a page offers, as the form's `window` choices. */
export interface WindowChoice {
  value: string;
  label: string;
}

/** Usage and the overview: this month, last month, or custom days. */
export const USAGE_WINDOWS: readonly WindowChoice[] = [
  { value: 'this-month', label: 'This month' },
  { value: 'last-month', label: 'Last month' },
  { value: 'custom', label: 'From – to (below)' },
];

/** Costs: any month (its picker), or custom days. */
export const MONTH_WINDOWS: readonly WindowChoice[] = [
  { value: 'month', label: 'A month' },
  { value: 'custom', label: 'From – to (below)' },
];

const fieldsOf = (window: UsageWindow | WindowFields): WindowFields =>
  'from' in window
    ? { kind: window.kind, fromDay: day(window.from), toDay: day(new Date(window.to.getTime() - DAY_MS)) }
    : window;

interface WindowFormProps {
  action: string;
  window: UsageWindow | WindowFields;
  choices?: readonly WindowChoice[];
  /** The first year the page reports on: the pickers start there. */
  earliestYear?: number;
  children?: Child;
}

/**
 * The one time-window form of the portal (usage, overview, costs): the
 * page's windows (this month or last month; or any month, with a month
 * picker), or from one UTC day to another; `children` adds a page's own
 * fields (the overview's chart selector).
 */
export function WindowForm({ action, window, choices = USAGE_WINDOWS, earliestYear, children }: WindowFormProps) {
  const fields = fieldsOf(window);
  const minDay = earliestYear === undefined ? undefined : `${earliestYear}-01-01`;
  return (
    <form method="get" action={action} class="panel actions filters">
      <div>
        <label for="window">Window</label>
        <select id="window" name="window">
          {choices.map((choice) => (
            <option value={choice.value} selected={fields.kind === choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      </div>
      {fields.month !== undefined && (
        <div>
          <label for="month">Month (UTC)</label>
          <input id="month" name="month" type="month" min={minDay?.slice(0, 7)} value={fields.month} />
        </div>
      )}
      <div>
        <label for="from">From (UTC)</label>
        <input id="from" name="from" type="date" min={minDay} value={fields.fromDay} />
      </div>
      <div>
        <label for="to">To, included (UTC)</label>
        <input id="to" name="to" type="date" min={minDay} value={fields.toDay} />
      </div>
      {children}
      <div>
        <button type="submit">Show</button>
      </div>
    </form>
  );
}
