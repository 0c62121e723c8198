/**
 * Human output: aligned columns and short dates. With `--json` none of this
 * is used; the API's body is printed as it came.
 *
 * @example
 * table([['ID', 'NAME'], ['org_1', 'Acme']]);
 * // ID     NAME
 * // org_1  Acme
 */
export function table(rows: string[][]): string {
  if (rows.length <= 1) return `${rows[0]?.join('  ') ?? ''}\n(none)`;
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `2025-01-31T12:34:56.789Z` → `2025-01-31 12:34 UTC`; null → `-` (or the fallback). */
export function date(iso: string | null, fallback = '-'): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : fallback;
}

/** `key: value` lines, labels aligned. */
export function fields(pairs: [string, string | number | boolean | null][]): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${`${label}:`.padEnd(width + 1)}  ${value ?? '-'}`).join('\n');
}

/** How a limit reads: a number, or "unlimited" for null. */
export function limit(value: number | null): string {
  return value === null ? 'unlimited' : String(value);
}
