import { cut } from './render.js';
import { readText } from './tools/files.js';
import { locate } from './tools/paths.js';
import { type ToolContext, ToolRefusal } from './tools/types.js';

/**
 * A task's `@path` mentions, attached: each file of the project it names is
 * read (as the read tool reads, bounded by `file_bytes` and
 * `tool_output_chars`) and appended to the task in a `<file>` element. A
 * path outside the project, or that is not a readable text file, is not
 * attached, and the reason is said.
 *
 * @example
 * const { text, notes } = await withMentions(ctx, 'explain @README.md');
 */
export async function withMentions(ctx: ToolContext, task: string): Promise<{ text: string; notes: string[] }> {
  const names = [...new Set([...task.matchAll(/(?:^|\s)@([^\s@]+)/g)].map((m) => m[1]!.replace(/[.,;:!?)]+$/, '')))];
  const files: string[] = [];
  const notes: string[] = [];
  for (const name of names) {
    const where = await locate(ctx.root, name);
    if (!where.inside) {
      notes.push(`@${name} is outside the project: not attached`);
      continue;
    }
    try {
      const content = await readText(ctx, where.path, where.shown);
      files.push(
        `<file path="${where.shown}">\n${cut(content, ctx.limits.tool_output_chars, 'tool_output_chars')}\n</file>`,
      );
      notes.push(`attached ${where.shown} (${content.split('\n').length} lines)`);
    } catch (error) {
      if (!(error instanceof ToolRefusal)) throw error;
      notes.push(`@${name} not attached: ${error.message}`);
    }
  }
  return { text: files.length ? `${task}\n\n${files.join('\n\n')}` : task, notes };
}
