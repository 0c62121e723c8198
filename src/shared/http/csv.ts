/**
 * How every CSV the gateway serves is written: RFC 4180 (CRLF, a header row, a cell with a comma, a
 * quote or a line break quoted), booleans as `true`/`false`, and a cell a spreadsheet would run as
 * a formula (starting with `=`, `+`, `-`, `@`, tab or CR, or their full-width forms: a key or
 * cluster named `=HYPERLINK(…)`) prefixed with `'`, so it opens as text; a number's minus sign is
 * left alone. These are csv-stringify's rules with the options the gateway used, and
 * test/shared/http/csv.test.ts holds the two to the same bytes. Written here rather than through
 * the library because an export writes hundreds of thousands of rows: csv-stringify made about 5 KB
 * of garbage a row, which grew the gateway's heap by over 100 MB during a month's ledger export
 * (docs/benchmark.md, "A year of history").
 */

const FORMULA_START = /^[=+@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One cell: null, undefined and '' are empty; a Date is its milliseconds; an object its JSON. */
function csvCell(field: unknown): string {
  if (field === null || field === undefined || field === '') return '';
  let value: string;
  if (typeof field === 'string') value = field;
  else if (typeof field === 'number' || typeof field === 'bigint' || typeof field === 'boolean') value = String(field);
  else if (field instanceof Date) value = String(field.getTime());
  else value = JSON.stringify(field);
  const signed = typeof field === 'number' || typeof field === 'bigint';
  if (FORMULA_START.test(value) || (value.startsWith('-') && !signed)) value = `'${value}`;
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * One record, its line break included. A row shorter than the header is written as it is (its
 * missing cells are absent, not empty), as csv-stringify writes it.
 *
 * @example
 * csvLine(['=1+1', 2n, null, true]); // "'=1+1,2,,true\r\n"
 */
export function csvLine(cells: readonly unknown[]): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) line += i === 0 ? csvCell(cells[i]) : `,${csvCell(cells[i])}`;
  return `${line}\r\n`;
}

/**
 * A whole CSV at once, for reports already in memory.
 *
 * @example
 * csvText(['name', 'amount'], [['=1+1', '2.50']]); // "name,amount\r\n'=1+1,2.50\r\n"
 */
export function csvText(columns: readonly string[], rows: readonly (readonly unknown[])[]): string {
  let text = csvLine(columns);
  for (const row of rows) text += csvLine(row);
  return text;
}

/**
 * A CSV made as its rows come, a line at a time, for downloads too long to hold in memory: give it
 * to `textStream` (`text-stream.ts`), which pulls only as fast as the client reads.
 *
 * @example
 * return c.body(textStream(csvLines(['time_utc', 'request_id'], rows)), 200, { 'content-type': 'text/csv' });
 */
export async function* csvLines(
  columns: readonly string[],
  rows: AsyncIterable<readonly unknown[]>,
): AsyncGenerator<string> {
  yield csvLine(columns);
  for await (const row of rows) yield csvLine(row);
}
