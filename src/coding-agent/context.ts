import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { AgentLimits } from './limits.js';
import { cut } from './render.js';
import { listFiles } from './tools/files.js';
import { resolvesInside } from './tools/paths.js';

const INSTRUCTIONS = `You are tollgate code, a coding agent working in the user's project folder through tools.
- Read before you edit. Edit with edit_file: old_string must occur exactly once; include surrounding lines to make it unique. Use write_file for new files.
- Paths are relative to the project folder. Paths outside it need the user's approval.
- run_command runs \`sh -c\` in the project folder, with a timeout; use it to build and test.
- Some calls need the user's approval; a refused call says why. Do not repeat a refused call unchanged.
- Be brief. When the task is done, say what you changed in a few lines.`;

/**
 * The first system message: the agent's instructions, the project's
 * AGENTS.md when present, its git status and a bounded file tree (at most
 * `tree_entries` entries, AGENTS.md cut at `tool_output_chars`).
 *
 * @example
 * messages.push({ role: 'system', content: await projectContext(root, limits) });
 */
export async function projectContext(root: string, limits: AgentLimits): Promise<string> {
  const [agents, status, files] = await Promise.all([
    readAgentsFile(root),
    gitStatus(root),
    listFiles(root, '**/*', limits.tree_entries + 1),
  ]);
  const tree =
    files.slice(0, limits.tree_entries).join('\n') +
    (files.length > limits.tree_entries
      ? `\n[more files not listed: the tree is limited to ${limits.tree_entries} entries (tree_entries)]`
      : '');
  const parts = [INSTRUCTIONS, `Project folder: ${root}\nToday: ${new Date().toISOString().slice(0, 10)}`];
  if (agents !== null)
    parts.push(`The project's AGENTS.md:\n${cut(agents, limits.tool_output_chars, 'tool_output_chars')}`);
  parts.push(
    status === null
      ? 'Not a git repository.'
      : `git status --short --branch:\n${cut(status, limits.tool_output_chars, 'tool_output_chars') || '(clean)'}`,
  );
  parts.push(`Files:\n${tree || '(none)'}`);
  return parts.join('\n\n');
}

/** The project's AGENTS.md, or null when there is none or it is a link leading out of the project. */
async function readAgentsFile(root: string): Promise<string | null> {
  const file = path.join(root, 'AGENTS.md');
  if (!(await resolvesInside(root, file))) return null;
  return readFile(file, 'utf8').catch(() => null);
}

function gitStatus(root: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['status', '--short', '--branch'],
      { cwd: root, timeout: 10_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout) => resolve(error ? null : stdout.trimEnd()),
    );
  });
}
