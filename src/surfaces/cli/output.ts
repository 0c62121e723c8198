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

/**
 * Escape sequences (CSI, OSC and the rest) and every other C0 or C1 control
 * character but newline and tab: what a run, a stack or a name holds is the
 * tenant's, and must not clear the reader's screen, retitle the window or
 * hide a line. ESC (\u001b), BEL and the C1 range are named by escape.
 */
/* eslint-disable no-control-regex -- matching control characters is this pattern's job (a block: the pattern may wrap) */
const CONTROLS =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[PX^_][^\u001b]*(?:\u001b\\)?|\u001b[\s\S]?|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
/* eslint-enable no-control-regex */

/**
 * Text safe to print on a terminal: control sequences removed (see
 * `CONTROLS`), newlines and tabs kept.
 *
 * @example
 * printable('\u001b]0;owned\u0007done\n'); // 'done\n'
 */
export function printable(text: string): string {
  return text.replace(CONTROLS, '');
}

/**
 * JSON for a terminal: C1 controls (which JSON leaves raw, and some terminals obey) written as `\u`
 * escapes.
 */
export function printableJson(json: string): string {
  return json.replace(/[\u0080-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
