import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { glob } from 'tinyglobby';
import { renderDiff } from '../diff.js';
import { cut } from '../render.js';
import { checkStillInside, locate } from './paths.js';
import { type PreparedCall, text, type ToolContext, ToolRefusal, whole } from './types.js';

/**
 * Reads a text file the tools may open: refused when missing, a folder, or larger than
 * `file_bytes`.
 */
export async function readText(ctx: ToolContext, absolute: string, shown: string): Promise<string> {
  let size: number;
  try {
    const info = await stat(absolute);
    if (info.isDirectory()) throw new ToolRefusal(`${shown} is a folder: use list_files`);
    size = info.size;
  } catch (error) {
    if (error instanceof ToolRefusal) throw error;
    throw new ToolRefusal(`${shown} does not exist`);
  }
  if (size > ctx.limits.file_bytes)
    throw new ToolRefusal(
      `${shown} has ${size} bytes, more than the ${ctx.limits.file_bytes} the tools open (file_bytes)`,
    );
  const bytes = await readFile(absolute);
  if (bytes.includes(0)) throw new ToolRefusal(`${shown} is not a text file`);
  return bytes.toString('utf8');
}

/** read_file: lines `offset`.. (1-based) numbered, at most `limit` (and `read_lines`). */
export async function prepareRead(ctx: ToolContext, args: Record<string, unknown>): Promise<PreparedCall> {
  const where = await locate(ctx.root, text(args, 'path'));
  const offset = Math.max(1, whole(args, 'offset', 1));
  const limit = Math.min(whole(args, 'limit', ctx.limits.read_lines) || ctx.limits.read_lines, ctx.limits.read_lines);
  return {
    kind: 'read',
    title: `read ${where.shown}${offset > 1 || args.limit !== undefined ? ` (lines ${offset}-${offset + limit - 1})` : ''}`,
    outside: where.inside ? [] : [where.path],
    async run() {
      const lines = (await readText(ctx, where.path, where.shown)).split('\n');
      const slice = lines.slice(offset - 1, offset - 1 + limit);
      const width = String(offset + slice.length).length;
      const body = slice.map((line, i) => `${String(offset + i).padStart(width)}\t${line}`).join('\n');
      const more =
        offset - 1 + limit < lines.length
          ? `\n[${lines.length} lines in all; read on with offset ${offset + limit}]`
          : '';
      return cut(body, ctx.limits.tool_output_chars, 'tool_output_chars') + more;
    },
  };
}

/**
 * list_files: files under a folder of the project, optionally matching a glob, at most
 * `tree_entries`.
 */
export async function prepareList(ctx: ToolContext, args: Record<string, unknown>): Promise<PreparedCall> {
  const where = await locate(ctx.root, text(args, 'path', { optional: true }) || '.');
  const pattern = text(args, 'pattern', { optional: true }) || '**/*';
  return {
    kind: 'read',
    title: `list ${where.shown}${pattern === '**/*' ? '' : ` ${pattern}`}`,
    outside: where.inside ? [] : [where.path],
    async run() {
      const files = await listFiles(where.path, pattern, ctx.limits.tree_entries + 1);
      const shown = files.slice(0, ctx.limits.tree_entries);
      const more =
        files.length > shown.length
          ? `\n[more entries not shown: listings are limited to ${ctx.limits.tree_entries} (tree_entries); narrow the pattern]`
          : '';
      return (shown.join('\n') || '(no files)') + more;
    },
  };
}

/** Files under `folder` matching `pattern`, without .git and node_modules, sorted, at most `max`. */
export async function listFiles(folder: string, pattern: string, max: number): Promise<string[]> {
  const found = await glob(pattern, {
    cwd: folder,
    dot: true,
    ignore: ['**/.git/**', '**/node_modules/**'],
    followSymbolicLinks: false,
    onlyFiles: false,
  });
  return found.sort().slice(0, max);
}

/** write_file: the whole content of a file, made or replaced; its diff shown before it is written. */
export async function prepareWrite(ctx: ToolContext, args: Record<string, unknown>): Promise<PreparedCall> {
  const where = await locate(ctx.root, text(args, 'path'));
  const content = text(args, 'content');
  let before = '';
  try {
    before = await readText(ctx, where.path, where.shown);
  } catch {
    // A new file: the diff is all additions.
  }
  return {
    kind: 'edit',
    title: `write ${where.shown}`,
    preview: renderDiff(ctx.paint, where.shown, before, content),
    outside: where.inside ? [] : [where.path],
    writes: [where.path],
    async run() {
      await checkStillInside(ctx.root, where);
      await mkdir(path.dirname(where.path), { recursive: true });
      await writeFile(where.path, content);
      return `wrote ${where.shown} (${content.split('\n').length} lines)`;
    },
  };
}
