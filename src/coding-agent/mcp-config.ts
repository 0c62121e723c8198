import { createHash } from 'node:crypto';
import { lstat, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolvesInside } from './tools/paths.js';

/** One MCP server of a config file: a program started over stdio, or a streamable HTTP endpoint. */
export type McpServerConfig =
  | { name: string; type: 'stdio'; command: string; args: string[]; env: Record<string, string> }
  | { name: string; type: 'http'; url: string; headers: Record<string, string> };

/**
 * A config file read: its servers, what was wrong in it (each entry left out, said), its text's
 * hash.
 */
export interface McpConfigFile {
  file: string;
  servers: McpServerConfig[];
  problems: string[];
  hash: string;
}

/**
 * The project's file (Claude Code's name and shape, so a project set up for it works here) and the
 * user's.
 */
export const PROJECT_MCP_FILE = '.mcp.json';
export const USER_MCP_FILE = 'mcp.json';
const TRUST_FILE = 'mcp-trusted.json';
const NAME = /^[A-Za-z0-9_-]{1,40}$/;

/**
 * Reads `{"mcpServers": {"name": {"command", "args", "env"} | {"type": "http", "url",
 * "headers"}}}`; null when the file does not exist. A file that is not JSON is one problem and no
 * servers.
 *
 * @example
 * const config = await readMcpConfig('/home/me/.config/tollgate/mcp.json');
 */
export async function readMcpConfig(file: string): Promise<McpConfigFile | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  const hash = createHash('sha256').update(text).digest('hex');
  const result: McpConfigFile = { file, servers: [], problems: [], hash };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { ...result, problems: [`${file} is not valid JSON (${(error as Error).message})`] };
  }
  const servers = isObject(parsed) ? parsed.mcpServers : undefined;
  if (!isObject(servers)) return { ...result, problems: [`${file}: "mcpServers" must be an object`] };
  for (const [name, entry] of Object.entries(servers)) {
    const server = serverOf(name, entry);
    if (typeof server === 'string') result.problems.push(`${file}: server "${name}" left out: ${server}`);
    else result.servers.push(server);
  }
  return result;
}

function serverOf(name: string, entry: unknown): McpServerConfig | string {
  if (!NAME.test(name)) return 'a name is 1 to 40 letters, digits, "_" or "-"';
  if (!isObject(entry)) return 'not an object';
  const type = entry.type ?? (entry.url !== undefined ? 'http' : 'stdio');
  if (type === 'stdio') {
    if (typeof entry.command !== 'string' || entry.command === '') return '"command" must be a string';
    const args = entry.args ?? [];
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) return '"args" must be a list of strings';
    const env = stringsOf(entry.env);
    if (env === null) return '"env" must map names to strings';
    return { name, type, command: entry.command, args: args, env };
  }
  if (type === 'http') {
    if (typeof entry.url !== 'string' || !/^https?:\/\//.test(entry.url)) return '"url" must be an http(s) URL';
    const headers = stringsOf(entry.headers);
    if (headers === null) return '"headers" must map names to strings';
    return { name, type, url: entry.url, headers };
  }
  return `"type" must be "stdio" or "http" (not ${JSON.stringify(type)})`;
}

/**
 * The project's `.mcp.json`, unless it is a link leading out of the project (a project file starts
 * programs: one elsewhere on the machine is not the project's to name). Answers the file, or a
 * reason it was not read, or null when there is none.
 */
export async function readProjectMcpConfig(root: string): Promise<McpConfigFile | string | null> {
  const file = path.join(root, PROJECT_MCP_FILE);
  if (
    !(await lstat(file).then(
      () => true,
      () => false,
    ))
  )
    return null;
  if (!(await resolvesInside(root, file)))
    return `${PROJECT_MCP_FILE} leads outside the project (a symbolic link): not read, no server of it started`;
  return readMcpConfig(file);
}

/**
 * Which projects' `.mcp.json` the person said yes to, each by the hash of the file's text: a
 * changed file asks again. Kept in the config folder, readable only by its owner.
 */
export class McpTrust {
  constructor(private readonly configDir: string) {}

  async trusts(root: string, hash: string): Promise<boolean> {
    return (await this.read())[root] === hash;
  }

  async trust(root: string, hash: string): Promise<void> {
    const projects = { ...(await this.read()), [root]: hash };
    await mkdir(this.configDir, { recursive: true, mode: 0o700 });
    const file = path.join(this.configDir, TRUST_FILE);
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify({ projects }, null, 2)}\n`, { mode: 0o600 });
    await rename(temporary, file);
  }

  private async read(): Promise<Record<string, string>> {
    try {
      const parsed = JSON.parse(await readFile(path.join(this.configDir, TRUST_FILE), 'utf8')) as unknown;
      const projects = isObject(parsed) ? stringsOf(parsed.projects) : null;
      return projects ?? {};
    } catch {
      return {};
    }
  }
}

/** One line a server, for the person to judge before starting them: `name: node server.js --flag`. */
export function describeServer(server: McpServerConfig): string {
  return server.type === 'stdio'
    ? `${server.name}: ${[server.command, ...server.args].map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ')}`
    : `${server.name}: ${server.url}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringsOf(value: unknown): Record<string, string> | null {
  if (value === undefined) return {};
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string')) return null;
  return value as Record<string, string>;
}
