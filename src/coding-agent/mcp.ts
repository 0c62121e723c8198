import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type { AgentLimits } from './limits.js';
import {
  describeServer,
  McpTrust,
  type McpServerConfig,
  PROJECT_MCP_FILE,
  readMcpConfig,
  readProjectMcpConfig,
  USER_MCP_FILE,
} from './mcp-config.js';
import { cut } from './render.js';
import { mcpAnswer } from './tools/mcp-tools.js';
import type { McpTools } from './tools/types.js';

/** Characters of a tool's description offered to the model (a server's text, cut like any other). */
const DESCRIPTION_CHARS = 2000;
/** Characters of a failed server's stderr shown with its failure. */
const STDERR_CHARS = 400;

interface Connected {
  config: McpServerConfig;
  client: Client;
}

interface Offered {
  server: Connected;
  /** The tool's name on its server. */
  tool: string;
  definition: ChatCompletionFunctionTool;
}

/**
 * The MCP servers of the user's config file and the project's `.mcp.json`,
 * through the official SDK (`@modelcontextprotocol/sdk`): started together,
 * their tools offered to the model as `mcp__SERVER__TOOL`. A server that
 * fails to start or to list its tools within `mcp_start_seconds` is named
 * and left out. `close()` stops every server (a stdio server's process is
 * ended: stdin closed, then SIGTERM, then SIGKILL).
 *
 * @example
 * const mcp = new McpServers(root, configDir, limits);
 * await mcp.start((text) => view.notice(text), null);
 * try { ... } finally { await mcp.close(); }
 */
export class McpServers implements McpTools {
  private readonly connected: Connected[] = [];
  private readonly offered = new Map<string, Offered>();

  constructor(
    private readonly root: string,
    private readonly configDir: string,
    private readonly limits: AgentLimits,
  ) {}

  /**
   * Reads both files and starts their servers. A project's servers start only once the person said
   * yes to its `.mcp.json` as it is now (`confirm`, remembered by the file's hash); without anyone
   * to ask (`-p`), an untrusted project file is named and its servers not started.
   */
  async start(notice: (text: string) => void, confirm: ((question: string) => Promise<boolean>) | null): Promise<void> {
    const servers = new Map<string, McpServerConfig>();
    const user = await readMcpConfig(path.join(this.configDir, USER_MCP_FILE));
    for (const problem of user?.problems ?? []) notice(problem);
    for (const server of user?.servers ?? []) servers.set(server.name, server);
    const project = await readProjectMcpConfig(this.root);
    if (typeof project === 'string') notice(project);
    else if (project) {
      for (const problem of project.problems) notice(problem);
      if (project.servers.length > 0 && (await this.allowed(project.servers, project.hash, notice, confirm)))
        for (const server of project.servers) servers.set(server.name, server);
    }
    const failures = await Promise.all([...servers.values()].map((server) => this.connect(server)));
    for (const failure of failures) if (failure) notice(failure);
    this.offer(notice);
  }

  private async allowed(
    servers: McpServerConfig[],
    hash: string,
    notice: (text: string) => void,
    confirm: ((question: string) => Promise<boolean>) | null,
  ): Promise<boolean> {
    const trust = new McpTrust(this.configDir);
    if (await trust.trusts(this.root, hash)) return true;
    const list = servers.map(describeServer).join('; ');
    if (!confirm) {
      notice(
        `MCP servers of this project's ${PROJECT_MCP_FILE} not started (${list}): it is not trusted yet. Start tollgate code here once without -p and answer yes to trust it.`,
      );
      return false;
    }
    const yes = await confirm(
      `This project's ${PROJECT_MCP_FILE} starts MCP servers (programs, as you): ${list}. Start them? Yes is remembered until the file changes.`,
    );
    if (yes) await trust.trust(this.root, hash);
    else notice(`MCP servers of ${PROJECT_MCP_FILE} not started`);
    return yes;
  }

  /** Connects to one server and lists its tools; answers null, or the line naming the failure. */
  private async connect(config: McpServerConfig): Promise<string | null> {
    const { transport, stderr } = this.transportOf(config);
    const client = new Client({ name: 'tollgate-code', version: '1' });
    const timeout = this.limits.mcp_start_seconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${timeout / 1000} s (mcp_start_seconds)`)),
          timeout,
        );
      });
      const server: Connected = { config, client };
      await Promise.race([client.connect(transport, { timeout }), expired]);
      const tools = await Promise.race([this.listTools(client, timeout), expired]);
      this.connected.push(server);
      for (const tool of tools) this.candidates.push({ server, ...tool });
      return null;
    } catch (error) {
      await client.close().catch(() => undefined);
      await transport.close().catch(() => undefined);
      const said = stderr().trim();
      return `MCP server "${config.name}" did not start: ${(error as Error).message}${said ? ` (its stderr: ${cut(said, STDERR_CHARS, 'its last lines')})` : ''}`;
    } finally {
      clearTimeout(timer);
    }
  }

  private readonly candidates: Array<{ server: Connected; name: string; description: string; schema: object }> = [];

  private async listTools(client: Client, timeout: number) {
    const tools: Array<{ name: string; description: string; schema: object }> = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout });
      for (const tool of page.tools)
        tools.push({ name: tool.name, description: tool.description ?? '', schema: tool.inputSchema });
      cursor = page.nextCursor;
    } while (cursor && tools.length <= this.limits.mcp_tools);
    return tools;
  }

  /**
   * Names each server's tools `mcp__SERVER__TOOL` (characters the model's API refuses become `_`),
   * up to `mcp_tools`.
   */
  private offer(notice: (text: string) => void): void {
    let left = 0;
    for (const { server, name, description, schema } of this.candidates) {
      const offeredName = `mcp__${server.config.name}__${name.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
      if (this.offered.has(offeredName)) {
        notice(`MCP tool "${name}" of "${server.config.name}" left out: its name clashes as ${offeredName}`);
        continue;
      }
      if (this.offered.size >= this.limits.mcp_tools) {
        left++;
        continue;
      }
      const definition: ChatCompletionFunctionTool = {
        type: 'function',
        function: {
          name: offeredName,
          description: cut(description, DESCRIPTION_CHARS, 'the description limit'),
          parameters: schema as Record<string, unknown>,
        },
      };
      this.offered.set(offeredName, { server, tool: name, definition });
    }
    if (left > 0) notice(`${left} MCP tools left out: at most ${this.limits.mcp_tools} are offered (mcp_tools)`);
  }

  private transportOf(config: McpServerConfig): { transport: Transport; stderr: () => string } {
    if (config.type === 'http') {
      // Past the bound the connection is closed, as the stdio transport does: the calls waiting on
      // it end.
      const transport: StreamableHTTPClientTransport = new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
        fetch: boundedFetch(this.limits.mcp_message_bytes, () => void transport.close()),
      });
      return { transport, stderr: () => '' };
    }
    // Its environment: the SDK's few safe variables (HOME, PATH, SHELL, TERM, USER, LOGNAME) and
    // the config's `env`: not the agent's own (TOLLGATE_API_KEY stays here). Its stderr is kept
    // (the tail), never shown raw.
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: this.root,
      stderr: 'pipe',
      maxBufferSize: this.limits.mcp_message_bytes,
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString('utf8')).slice(-STDERR_CHARS)));
    return { transport, stderr: () => tail };
  }

  tools(): ChatCompletionFunctionTool[] {
    return [...this.offered.values()].map((o) => o.definition);
  }

  has(name: string): boolean {
    return this.offered.has(name);
  }

  /** The servers started and their tools' count, for `/mcp`. */
  summary(): string[] {
    return this.connected.map((c) => {
      const count = [...this.offered.values()].filter((o) => o.server === c).length;
      return `${describeServer(c.config)} · ${count} tool${count === 1 ? '' : 's'}`;
    });
  }

  /**
   * Calls a tool; answers its text for the model (errors too: a failed call is the model's to read,
   * not fatal).
   */
  async call(name: string, args: Record<string, unknown>, signal: AbortSignal): Promise<string> {
    const offered = this.offered.get(name)!;
    try {
      const result = await offered.server.client.callTool({ name: offered.tool, arguments: args }, undefined, {
        signal,
        timeout: this.limits.mcp_call_seconds * 1000,
      });
      return cut(mcpAnswer(result), this.limits.tool_output_chars, 'tool_output_chars');
    } catch (error) {
      if (signal.aborted) return 'not finished: the user cancelled';
      const message = (error as Error).message;
      return `error: the MCP server "${offered.server.config.name}" failed: ${/timed out/i.test(message) ? `no answer within ${this.limits.mcp_call_seconds} s (mcp_call_seconds)` : message}`;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.connected.splice(0).map((c) => c.client.close().catch(() => undefined)));
  }
}

/**
 * fetch, each answer's body cut off with an error past `max` bytes (`mcp_message_bytes`),
 * `overflow` then called.
 */
function boundedFetch(max: number, overflow: () => void) {
  return async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(url, init);
    if (!response.body) return response;
    let seen = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen <= max) return controller.enqueue(chunk);
          controller.error(new Error(`an answer larger than ${max} bytes (mcp_message_bytes)`));
          overflow();
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
