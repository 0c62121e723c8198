import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { csvLine, csvLines, csvText } from '../../../src/shared/http/csv.js';

/**
 * The gateway writes CSV itself (src/shared/http/csv.ts: csv-stringify made kilobytes of garbage a
 * row); these hold it to csv-stringify's bytes with the options the gateway used, over every kind
 * of cell and the strings a hostile tenant names things with (formulas, quotes, line breaks,
 * full-width signs).
 */
const LIBRARY_OPTIONS = {
  header: true,
  record_delimiter: 'windows',
  escape_formulas: true,
  cast: { boolean: (value: boolean) => String(value) },
  // With a record delimiter set, csv-stringify quotes only that exact sequence: a lone line feed or
  // carriage return in a cell went out bare, and a reader took it as a new row (a key named
  // "x\n=cmd" wrote a row of its own, past the formula guard). The gateway quotes both, as RFC 4180
  // asks.
  quote_record_delimiter: true,
} as const;

const library = (columns: string[], rows: unknown[][]) => stringify(rows, { ...LIBRARY_OPTIONS, columns });

const HOSTILE = [
  '=HYPERLINK("http://evil","x")',
  '+1',
  '-2+3',
  '@SUM(A1)',
  '\tdata',
  '\rdata',
  '\uFF1D1+1',
  '\uFF0B1',
  '\uFF0D1',
  '\uFF20x',
  'a,b',
  'say "hi"',
  'two\nlines',
  'cr\rhere',
  "'quoted",
  ' spaced ',
  '',
  'plain',
  'ünïcödé ✓',
];
const VALUES: unknown[] = [
  ...HOSTILE,
  0,
  -5,
  3.25,
  12345678901234567890n,
  -7n,
  true,
  false,
  null,
  undefined,
  new Date('2026-11-28T07:00:00.123Z'),
  { a: 1, b: 'x,y' },
];

describe('CSV as the gateway writes it', () => {
  it('writes every kind of cell as csv-stringify does', () => {
    const columns = ['value', 'next'];
    for (const value of VALUES) {
      for (const next of [1, 'x', null])
        expect(csvText(columns, [[value, next]])).toBe(library(columns, [[value, next]]));
    }
  });

  it('writes a header alone, many rows, and rows shorter than the header the same way', () => {
    const columns = ['a', 'b', 'c', 'd'];
    expect(csvText(columns, [])).toBe(library(columns, []));
    const rows = VALUES.map((v, i) => [i, v, HOSTILE[i % HOSTILE.length], i % 3 === 0 ? null : 'end']);
    expect(csvText(columns, rows)).toBe(library(columns, rows));
    const short = [[1, 'two'], [3], [4, 5, 6, 7]];
    expect(csvText(columns, short)).toBe(library(columns, short));
  });

  it('gives the same lines as a stream, the header first', async () => {
    async function* rows() {
      yield ['=x', 1n];
      yield ['y', null];
    }
    const lines: string[] = [];
    for await (const line of csvLines(['name', 'amount'], rows())) lines.push(line);
    expect(lines.join('')).toBe(
      library(
        ['name', 'amount'],
        [
          ['=x', 1n],
          ['y', null],
        ],
      ),
    );
    expect(lines[0]).toBe(csvLine(['name', 'amount']));
  });
});
