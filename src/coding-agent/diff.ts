import { structuredPatch } from 'diff';
import { clean, type Paint } from './render.js';

/** Unchanged lines shown around each change. */
const CONTEXT = 3;

/**
 * A file's change as a person reads it (Claude Code's and Codex's way, not
 * git's): a line of counts, then each line numbered in the old and the new
 * file, `-` red for removed, `+` green for added, three lines of context,
 * `⋮` between changes far apart. No `---`/`+++`/`@@` headers.
 *
 * @example
 * renderDiff(painter(false), 'a.txt', 'one\n', 'uno\n');
 * // '  a.txt +1 -1\n  1   - one\n    1 + uno'
 */
export function renderDiff(paint: Paint, shown: string, before: string, after: string): string {
  const patch = structuredPatch(shown, shown, before, after, '', '', { context: CONTEXT });
  const last = patch.hunks.at(-1);
  const width = last ? String(Math.max(last.oldStart + last.oldLines, last.newStart + last.newLines)).length : 1;
  const number = (n: number | null) => (n === null ? ' '.repeat(width) : String(n).padStart(width));
  let added = 0;
  let removed = 0;
  const body: string[] = [];
  for (const [index, hunk] of patch.hunks.entries()) {
    if (index > 0) body.push(paint.dim(`  ${' '.repeat(width)} ⋮`));
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    for (const line of hunk.lines) {
      const text = clean(line.slice(1));
      if (line.startsWith('-')) {
        removed++;
        body.push(paint.red(`  ${number(oldLine++)} ${number(null)} - ${text}`));
      } else if (line.startsWith('+')) {
        added++;
        body.push(paint.green(`  ${number(null)} ${number(newLine++)} + ${text}`));
      } else if (line.startsWith(' ')) {
        body.push(`${paint.dim(`  ${number(oldLine++)} ${number(newLine++)}`)}   ${text}`);
      } // `\ No newline at end of file` is git's note, not a line of the file.
    }
  }
  return [paint.dim(`  ${clean(shown)} +${added} -${removed}`), ...body].join('\n');
}
