import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { cut } from '../render.js';
import { listFiles } from './files.js';
import { locate, resolvesInside } from './paths.js';
import { type PreparedCall, text, type ToolContext, ToolRefusal } from './types.js';

/**
 * search: lines matching a regular expression, as `file:line:text`, with
 * ripgrep when it is on PATH (fast, and it honours .gitignore), else a
 * built-in search over the project's files. At most `search_matches` lines.
 */
export async function prepareSearch(
  ctx: ToolContext,
  args: Record<string, unknown>,
  ripgrep: string | null,
): Promise<PreparedCall> {
  const pattern = text(args, 'pattern');
  const where = await locate(ctx.root, text(args, 'path', { optional: true }) || '.');
  const fileGlob = text(args, 'glob', { optional: true });
  let regex: RegExp;
  try {
    regex = new RegExp(pattern);
  } catch (error) {
    throw new ToolRefusal(`pattern is not a regular expression: ${(error as Error).message}`);
  }
  return {
    kind: 'read',
    title: `search ${JSON.stringify(pattern)} in ${where.shown}${fileGlob ? ` (${fileGlob})` : ''}`,
    outside: where.inside ? [] : [where.path],
    async run(signal) {
      const max = ctx.limits.search_matches;
      const lines = ripgrep
        ? await withRipgrep(ripgrep, ctx.root, pattern, where.path, fileGlob, max, signal)
        : await builtIn(ctx, regex, where.path, fileGlob, max);
      const more =
        lines.length > max
          ? `\n[more matches not shown: a search answers at most ${max} lines (search_matches); narrow it]`
          : '';
      return (
        cut(lines.slice(0, max).join('\n') || 'no matches', ctx.limits.tool_output_chars, 'tool_output_chars') + more
      );
    },
  };
}

async function withRipgrep(
  rg: string,
  root: string,
  pattern: string,
  target: string,
  fileGlob: string,
  max: number,
  signal: AbortSignal,
): Promise<string[]> {
  // Always a path: without one, ripgrep reads its standard input when that is not a terminal.
  // Ignore files are read only from inside the project: not from its parents, nor through a link
  // leading out.
  const args = [
    '--no-ignore-parent',
    ...(await ignoreFilesLeadOut(root)),
    '--line-number',
    '--no-heading',
    '--color',
    'never',
    '--max-columns',
    '400',
    ...(fileGlob ? ['--glob', fileGlob] : []),
    '--regexp',
    pattern,
    '--',
    path.relative(root, target) || '.',
  ];
  return new Promise<string[]>((resolve, reject) => {
    execFile(rg, args, { cwd: root, maxBuffer: 64 * 1024 * 1024, signal }, (error, stdout) => {
      // ripgrep exits 1 when nothing matched.
      if (error && (error as { code?: unknown }).code !== 1)
        return reject(new ToolRefusal(`ripgrep failed: ${error.message.split('\n')[0]}`));
      // `rg … .` names files `./src/a.ts`; the built-in search and the other tools say `src/a.ts`.
      const lines = stdout.split('\n').filter(Boolean);
      resolve(lines.slice(0, max + 1).map((line) => line.replace(/^\.\//, '')));
    });
  });
}

async function builtIn(
  ctx: ToolContext,
  regex: RegExp,
  target: string,
  fileGlob: string,
  max: number,
): Promise<string[]> {
  const info = await stat(target).catch(() => null);
  if (!info) throw new ToolRefusal(`${path.relative(ctx.root, target) || '.'} does not exist`);
  const files = info.isDirectory()
    ? (await listFiles(target, fileGlob || '**/*', Number.MAX_SAFE_INTEGER))
        .filter((f) => !f.endsWith('/'))
        .map((f) => path.join(target, f))
    : [target];
  const matches: string[] = [];
  for (const file of files) {
    // A link in the project that leads out is not searched (a read of it would ask).
    if (!(await resolvesInside(ctx.root, file))) continue;
    const size = (await stat(file).catch(() => null))?.size ?? Infinity;
    if (size > ctx.limits.file_bytes) continue;
    const bytes = await readFile(file).catch(() => null);
    if (!bytes || bytes.includes(0)) continue;
    const lines = bytes.toString('utf8').split('\n');
    for (let i = 0; i < lines.length && matches.length <= max; i++) {
      if (regex.test(lines[i]!)) matches.push(`${path.relative(ctx.root, file)}:${i + 1}:${lines[i]!.slice(0, 400)}`);
    }
    if (matches.length > max) break;
  }
  return matches;
}

/**
 * ripgrep's flags to skip the project's own ignore files when one of them is a link leading out of
 * it.
 */
async function ignoreFilesLeadOut(root: string): Promise<string[]> {
  const flags: string[] = [];
  if (!(await resolvesInside(root, path.join(root, '.gitignore')))) flags.push('--no-ignore-vcs');
  const dots = await Promise.all(['.ignore', '.rgignore'].map((name) => resolvesInside(root, path.join(root, name))));
  if (dots.includes(false)) flags.push('--no-ignore-dot');
  return flags;
}
