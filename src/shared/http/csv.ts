import { stringify, type Stringifier } from 'csv-stringify';
import { stringify as stringifyAll } from 'csv-stringify/sync';

/**
 * How every CSV the gateway serves is written (csv-stringify): RFC 4180
 * (CRLF, a header row), booleans as `true`/`false`, and a cell a spreadsheet
 * would run as a formula (starting with `=`, `+`, `-`, `@`, tab or CR: a key
 * or cluster named `=HYPERLINK(…)`) prefixed with `'` (`escape_formulas`),
 * so it opens as text. Numbers are never touched; the strings we write for
 * amounts are never negative.
 */
const CSV_OPTIONS = {
  header: true,
  record_delimiter: 'windows',
  escape_formulas: true,
  cast: { boolean: (value: boolean) => String(value) },
} as const;

/**
 * A whole CSV at once, for reports already in memory.
 *
 * @example
 * csvText(['name', 'amount'], [['=1+1', '2.50']]); // "name,amount\r\n'=1+1,2.50\r\n"
 */
export function csvText(columns: readonly string[], rows: unknown[][]): string {
  return stringifyAll(rows, { ...CSV_OPTIONS, columns: [...columns] });
}

/**
 * A CSV written row by row as a stream (`write` each row, then `end`), for
 * downloads too long to hold in memory.
 *
 * @example
 * const csv = csvStream(['time_utc', 'request_id']);
 * csv.write([new Date().toISOString(), 'req_1']);
 * csv.end();
 * return c.body(Readable.toWeb(csv) as ReadableStream, 200, { 'content-type': 'text/csv; charset=utf-8' });
 */
export function csvStream(columns: readonly string[]): Stringifier {
  return stringify({ ...CSV_OPTIONS, columns: [...columns] });
}
