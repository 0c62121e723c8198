import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import { prepareEdit } from './edit.js';
import { prepareList, prepareRead, prepareWrite } from './files.js';
import { prepareMcp } from './mcp-tools.js';
import { prepareSearch } from './search.js';
import { prepareShell } from './shell.js';
import { type McpTools, type PreparedCall, type ToolContext, ToolRefusal } from './types.js';

export { ToolRefusal, type McpTools, type PreparedCall, type ToolContext, type ToolKind } from './types.js';

const fn = (
  name: string,
  description: string,
  properties: Record<string, unknown>,
  required: string[],
): ChatCompletionFunctionTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
});
const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });

/** The agent's own tools; `toolsFor` adds the MCP servers'. */
export const TOOLS: ChatCompletionFunctionTool[] = [
  fn(
    'read_file',
    'Read a text file, lines numbered. Use offset and limit for long files.',
    { path: str('Path, relative to the project'), offset: int('First line, from 1'), limit: int('Lines to read') },
    ['path'],
  ),
  fn(
    'list_files',
    'List files under a folder, optionally matching a glob such as "src/**/*.ts".',
    { path: str('Folder, relative to the project (default ".")'), pattern: str('Glob (default "**/*")') },
    [],
  ),
  fn(
    'search',
    'Search file contents with a regular expression; answers file:line:text.',
    {
      pattern: str('Regular expression'),
      path: str('Folder or file (default ".")'),
      glob: str('Only files matching this glob'),
    },
    ['pattern'],
  ),
  fn(
    'edit_file',
    'Replace one exact occurrence of old_string with new_string. old_string must occur exactly once: include enough context.',
    { path: str('File'), old_string: str('Exact text to replace'), new_string: str('Replacement') },
    ['path', 'old_string', 'new_string'],
  ),
  fn(
    'write_file',
    'Create or overwrite a file with the whole content given.',
    { path: str('File'), content: str('The whole new content') },
    ['path', 'content'],
  ),
  fn(
    'run_command',
    'Run a shell command in the project folder; answers its output and exit code.',
    { command: str('The command line'), timeout_seconds: int('Stop it after this many seconds') },
    ['command'],
  ),
];

const READ_ONLY = new Set(['read_file', 'list_files', 'search']);

/**
 * The tools the model is offered: `plan` mode offers the read-only ones (no MCP tool: it may change
 * anything).
 */
export function toolsFor(mode: string, mcp?: McpTools): ChatCompletionFunctionTool[] {
  if (mode === 'plan') return TOOLS.filter((tool) => READ_ONLY.has(tool.function.name));
  return mcp ? [...TOOLS, ...mcp.tools()] : TOOLS;
}

/**
 * Checks a tool call of the model and readies it; throws `ToolRefusal` with
 * the reason the model is told (unknown tool, arguments that are not a JSON
 * object, a missing file, a non-unique edit).
 *
 * @example
 * const call = await prepare(ctx, 'edit_file', '{"path":"a.ts","old_string":"x","new_string":"y"}');
 */
export async function prepare(ctx: ToolContext, name: string, argumentsJson: string): Promise<PreparedCall> {
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson || '{}');
  } catch {
    throw new ToolRefusal('the arguments are not valid JSON');
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new ToolRefusal('the arguments must be a JSON object');
  const given = args as Record<string, unknown>;
  if (ctx.mcp?.has(name)) return prepareMcp(ctx, name, given);
  switch (name) {
    case 'read_file':
      return prepareRead(ctx, given);
    case 'list_files':
      return prepareList(ctx, given);
    case 'search':
      return prepareSearch(ctx, given, ripgrepPath());
    case 'edit_file':
      return prepareEdit(ctx, given);
    case 'write_file':
      return prepareWrite(ctx, given);
    case 'run_command':
      return prepareShell(ctx, given);
    default:
      throw new ToolRefusal(
        `there is no tool "${name}"; the tools are ${TOOLS.map((t) => t.function.name).join(', ')}`,
      );
  }
}

let ripgrep: string | null | undefined;

/** `rg` on PATH, looked up once. */
export function ripgrepPath(pathVariable = process.env.PATH ?? ''): string | null {
  if (ripgrep !== undefined) return ripgrep;
  ripgrep = null;
  for (const folder of pathVariable.split(path.delimiter).filter(Boolean)) {
    try {
      accessSync(path.join(folder, 'rg'), constants.X_OK);
      ripgrep = path.join(folder, 'rg');
      break;
    } catch {
      // Not here.
    }
  }
  return ripgrep;
}
