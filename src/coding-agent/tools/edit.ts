import { writeFile } from 'node:fs/promises';
import { renderDiff } from '../diff.js';
import { readText } from './files.js';
import { checkStillInside, locate } from './paths.js';
import { type PreparedCall, text, type ToolContext, ToolRefusal } from './types.js';

/**
 * edit_file: replaces one exact, unique occurrence of `old_string`. Refused
 * with the reason when the string is absent or found more than once (the
 * model is told to add context), so an edit never lands in the wrong place.
 */
export async function prepareEdit(ctx: ToolContext, args: Record<string, unknown>): Promise<PreparedCall> {
  const where = await locate(ctx.root, text(args, 'path'));
  const oldString = text(args, 'old_string');
  const newString = text(args, 'new_string');
  if (oldString === '') throw new ToolRefusal('old_string is empty: use write_file to make a new file');
  const before = await readText(ctx, where.path, where.shown);
  const count = occurrences(before, oldString);
  if (count === 0)
    throw new ToolRefusal(`old_string was not found in ${where.shown}: read the file and copy the text exactly`);
  if (count > 1)
    throw new ToolRefusal(
      `old_string occurs ${count} times in ${where.shown}: include more surrounding lines so it is unique`,
    );
  const at = before.indexOf(oldString);
  const after = before.slice(0, at) + newString + before.slice(at + oldString.length);
  return {
    kind: 'edit',
    title: `edit ${where.shown}`,
    preview: renderDiff(ctx.paint, where.shown, before, after),
    outside: where.inside ? [] : [where.path],
    writes: [where.path],
    async run() {
      // The file may have changed while the person looked at the diff.
      if ((await readText(ctx, where.path, where.shown)) !== before)
        throw new ToolRefusal(`${where.shown} changed since the edit was prepared: read it again`);
      await checkStillInside(ctx.root, where);
      await writeFile(where.path, after);
      return `edited ${where.shown}`;
    },
  };
}

function occurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}
