import { z } from 'zod';
import { GatewayError } from '../../shared/http/errors.js';
import { toDetails } from '../../shared/http/validate.js';

/**
 * A report's window: whole seconds, `from` inclusive, `to` exclusive (FOCUS's charge periods are
 * the same).
 */
export interface CostWindow {
  from: Date;
  to: Date;
  /** `YYYY-MM` when the window is a calendar month (UTC). */
  month: string | null;
}

/** The longest window a report covers: a leap year. */
const MAX_WINDOW_DAYS = 366;

/**
 * Reports start at the Unix epoch. Earlier years are refused rather than
 * misread: `Date.UTC` takes the years 0-99 as 1900-1999, so `0001-01` would
 * otherwise report January 1901.
 */
export const EARLIEST_YEAR = 1970;

const instant = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'Must be an ISO 8601 date (2026-11-01) or date-time with a zone (2026-11-01T09:30:00Z).',
  })
  .refine((text) => new Date(text).getUTCFullYear() >= EARLIEST_YEAR, `Must be in ${EARLIEST_YEAR} or later.`);
/** A report's month, `YYYY-MM`, from January 1970 on. */
const reportMonth = z
  .string()
  .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'Must be a month as YYYY-MM.')
  .refine((text) => Number(text.slice(0, 4)) >= EARLIEST_YEAR, `Must be ${EARLIEST_YEAR}-01 or later.`);
/**
 * An instant as the cost API takes it (a date is its UTC midnight; a
 * date-time needs a zone), to a whole second, as a Date.
 */
export const wholeSecondInstant = instant
  .transform((text) => new Date(text))
  .refine((date) => date.getTime() % 1000 === 0, 'Must be a whole second.');

const windowQuery = z
  .object({
    month: reportMonth.optional(),
    from: instant.optional(),
    to: instant.optional(),
  })
  .superRefine((query, ctx) => {
    if (query.month !== undefined && (query.from !== undefined || query.to !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['month'], message: 'Send either month or from and to, not both.' });
    } else if ((query.from === undefined) !== (query.to === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [query.from === undefined ? 'from' : 'to'],
        message: 'Send from and to together.',
      });
    }
  });

/**
 * The window of a report from its query: `month=YYYY-MM` (that UTC month),
 * or `from` and `to` (a date is its UTC midnight; a date-time needs a zone,
 * and whole seconds), or nothing for the UTC month of `now`. Every bad
 * parameter is named (`VALIDATION_ERROR` details on `month`, `from`, `to`).
 *
 * @example
 * parseWindow({ month: '2026-11' }, new Date()); // 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z
 */
export function parseWindow(query: Record<string, string | undefined>, now: Date): CostWindow {
  const parsed = windowQuery.safeParse(query);
  if (!parsed.success) throw invalid(toDetails(parsed.error.issues));
  const { month, from, to } = parsed.data;
  if (month !== undefined) return monthWindow(month);
  if (from === undefined || to === undefined) return monthWindow(now.toISOString().slice(0, 7));
  const start = new Date(from);
  const end = new Date(to);
  const details = [
    ...(start.getTime() % 1000 === 0 ? [] : [{ field: 'from', message: 'Must be a whole second.' }]),
    ...(end.getTime() % 1000 === 0 ? [] : [{ field: 'to', message: 'Must be a whole second.' }]),
  ];
  if (details.length === 0 && end <= start) details.push({ field: 'to', message: 'Must be after from.' });
  if (details.length === 0 && end.getTime() - start.getTime() > MAX_WINDOW_DAYS * 86_400_000)
    details.push({ field: 'to', message: `A window spans at most ${MAX_WINDOW_DAYS} days.` });
  if (details.length > 0) throw invalid(details);
  return { from: start, to: end, month: null };
}

/** Whether `text` is a month a report covers: `YYYY-MM`, 1970 or later. */
export function isReportMonth(text: string): boolean {
  return reportMonth.safeParse(text).success;
}

/** The UTC calendar month `YYYY-MM` (one `isReportMonth` takes). */
export function monthWindow(month: string): CostWindow {
  const [year, index] = month.split('-').map(Number) as [number, number];
  return { from: new Date(Date.UTC(year, index - 1, 1)), to: new Date(Date.UTC(year, index, 1)), month };
}

function invalid(details: { field: string; message: string }[]): GatewayError {
  return new GatewayError('invalid_request', 'Invalid query parameters.', { details });
}
