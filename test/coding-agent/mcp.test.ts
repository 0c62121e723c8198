import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';
import { agent, type AgentRun } from './agent-process.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';
import { openTerminal, tmuxMissing } from './terminal.js';

const hash = (text: string) => createHash('sha256').update(text).digest('hex');
const NOTES_SERVER = path.join(repoRoot, 'test/fixtures/mcp/notes-server.mjs');

/** Whether a process of that pid still runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// MCP servers in `tollgate code -p`: the real gateway before a scripted upstream, the agent a child
// process, the servers real programs over stdio (the official SDK on both sides).
describe('tollgate code: MCP servers', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let configDir: string;
  let env: Record<string, string>;
  const runs: AgentRun[] = [];

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-mcp-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    const { secret } = await gateway.tenant();
    env = { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret };
  }, 60_000);
  afterEach(async () => {
    for (const run of runs.splice(0)) run.kill();
    upstream.clear();
    await rm(project, { recursive: true, force: true });
    await rm(configDir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  async function setUp(userServers: Record<string, unknown>, config: Record<string, unknown> = {}): Promise<void> {
    project = await mkdtemp(path.join(tmp, 'project-'));
    configDir = await mkdtemp(path.join(tmp, 'config-'));
    await writeFile(path.join(configDir, 'mcp.json'), JSON.stringify({ mcpServers: userServers }));
    await writeFile(path.join(configDir, 'config.json'), JSON.stringify(config));
  }
  const start = (args: string[]) => {
    const run = agent(args, { ...env, TOLLGATE_CONFIG_DIR: configDir }, project);
    runs.push(run);
    return run;
  };
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
  const notes = (pidFile?: string) => ({
    command: process.execPath,
    args: [NOTES_SERVER],
    ...(pidFile ? { env: { PID_FILE: pidFile } } : {}),
  });

  it("offers a server's tools, runs one a turn calls (its file written), names the servers that fail, and stops them all", async () => {
    const pidFile = path.join(tmp, 'notes.pid');
    const hangPid = path.join(tmp, 'hang.pid');
    await setUp(
      {
        notes: notes(pidFile),
        missing: { command: path.join(tmp, 'no-such-program') },
        quits: { command: process.execPath, args: ['-e', 'process.stderr.write("bad config\\n"); process.exit(3)'] },
        hangs: {
          command: process.execPath,
          args: [
            '-e',
            `require('fs').writeFileSync(${JSON.stringify(hangPid)}, String(process.pid)); setInterval(() => {}, 1000)`,
          ],
        },
      },
      { limits: { mcp_start_seconds: 3 } },
    );
    upstream.push(
      { toolCalls: [call('mcp__notes__write_note', { file: 'note.txt', text: 'written by MCP' })] },
      { text: 'Wrote the note.' },
    );
    const run = start(['-p', 'write a note', '--approval', 'yolo', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);

    expect(await readFile(path.join(project, 'note.txt'), 'utf8')).toBe('written by MCP');
    const [first, second] = upstream.requests.slice(-2);
    const offered = (first!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toEqual(expect.arrayContaining(['read_file', 'mcp__notes__write_note', 'mcp__notes__long_answer']));
    expect(offered.filter((name) => name.startsWith('mcp__'))).toHaveLength(3);
    expect(second!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'wrote note.txt' });

    const notices = run
      .events()
      .filter((e) => e.type === 'notice')
      .map((e) => e.text as string);
    expect(notices).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^MCP server "missing" did not start: .*ENOENT/),
        expect.stringMatching(/^MCP server "quits" did not start: .*its stderr: bad config/),
        expect.stringMatching(/^MCP server "hangs" did not start: no answer within 3 s \(mcp_start_seconds\)/),
      ]),
    );
    expect(run.events().at(-1)).toMatchObject({ type: 'result', status: 'done', text: 'Wrote the note.' });
    // No server outlives the agent: the one that answered and the one that hung.
    for (const file of [pidFile, hangPid]) {
      const pid = Number(await readFile(file, 'utf8'));
      await until(`server ${pid} stopped`, () => !alive(pid));
    }
  }, 30_000);

  it("cuts a long answer to tool_output_chars and escapes a server's control characters in every output", async () => {
    await setUp({ notes: notes() }, { limits: { tool_output_chars: 1000 } });
    upstream.push(
      { toolCalls: [call('mcp__notes__long_answer', { size: 50_000 }), call('mcp__notes__hostile_answer', {})] },
      { text: 'done' },
    );
    const run = start(['-p', 'go', '--approval', 'yolo', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);
    const answers = upstream.requests
      .at(-1)!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => m.content as string);
    expect(answers[0]!.length).toBeLessThan(1200);
    expect(answers[0]).toContain('characters cut here: output is limited to 1000 characters (tool_output_chars)');
    // eslint-disable-next-line no-control-regex
    expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(run.stdout).toContain('\\u009b31m');

    const text = start(['-p', 'go again', '--approval', 'yolo']);
    upstream.push({ toolCalls: [call('mcp__notes__hostile_answer', {})] }, { text: 'ok' });
    expect(await text.exit, text.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(text.stderr + text.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);

    // A message over mcp_message_bytes closes the server: the call answers an error, the task goes
    // on.
    await writeFile(path.join(configDir, 'config.json'), JSON.stringify({ limits: { mcp_message_bytes: 10_000 } }));
    upstream.push({ toolCalls: [call('mcp__notes__long_answer', { size: 50_000 })] }, { text: 'too big' });
    const big = start(['-p', 'big', '--approval', 'yolo', '--output-format', 'json']);
    expect(await big.exit, big.stderr).toBe(0);
    expect(upstream.requests.at(-1)!.messages.at(-1)!.content).toMatch(/^error: the MCP server "notes" failed: /);
  }, 30_000);

  it('asks before an MCP tool in ask mode (declined with -p), and does not offer them in plan mode', async () => {
    await setUp({ notes: notes() });
    upstream.push({ toolCalls: [call('mcp__notes__write_note', { file: 'n.txt', text: 'x' })] }, { text: 'ok' });
    const run = start(['-p', 'note', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);
    await expect(readFile(path.join(project, 'n.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(upstream.requests.at(-1)!.messages.at(-1)!.content).toMatch(/^refused: the user declined this call/);
    expect(run.events().some((e) => e.type === 'notice' && /^Call this MCP tool\?/.test(e.text as string))).toBe(true);

    upstream.push({ text: 'planned' });
    const plan = start(['-p', 'plan it', '--approval', 'plan', '--output-format', 'json']);
    expect(await plan.exit, plan.stderr).toBe(0);
    const offered = (upstream.requests.at(-1)!.tools as Array<{ function: { name: string } }>).map(
      (t) => t.function.name,
    );
    expect(offered.some((name) => name.startsWith('mcp__'))).toBe(false);
  }, 30_000);

  it("does not start a project's .mcp.json servers until trusted, nor a .mcp.json that links outside", async () => {
    await setUp({});
    const marker = path.join(tmp, 'project-server-ran');
    const projectServers = {
      mcpServers: {
        planted: {
          command: process.execPath,
          args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`],
        },
      },
    };
    await writeFile(path.join(project, '.mcp.json'), JSON.stringify(projectServers));
    upstream.push({ text: 'ok' });
    const run = start(['-p', 'hello', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);
    expect(run.events()).toContainEqual({
      type: 'notice',
      text: expect.stringMatching(
        /^MCP servers of this project's \.mcp\.json not started \(planted: .*\): it is not trusted yet/,
      ) as unknown,
    });
    await expect(readFile(marker, 'utf8')).rejects.toThrow(/ENOENT/);

    // A .mcp.json that is a link to a file outside the project is not read, trusted or not.
    const outside = path.join(tmp, 'elsewhere.mcp.json');
    await writeFile(outside, JSON.stringify(projectServers));
    await rm(path.join(project, '.mcp.json'));
    await symlink(outside, path.join(project, '.mcp.json'));
    // Even with its content trusted: the link is what is refused.
    const trusted = { [await realpath(project)]: hash(await readFile(outside, 'utf8')) };
    await writeFile(path.join(configDir, 'mcp-trusted.json'), JSON.stringify({ projects: trusted }));
    upstream.push({ text: 'ok' });
    const linked = start(['-p', 'hello', '--output-format', 'stream-json']);
    expect(await linked.exit, linked.stderr).toBe(0);
    await expect(readFile(marker, 'utf8')).rejects.toThrow(/ENOENT/);
    expect(linked.events()).toContainEqual({
      type: 'notice',
      text: '.mcp.json leads outside the project (a symbolic link): not read, no server of it started',
    });
  }, 30_000);

  it("starts a trusted project's servers (trust kept by the file's hash) and asks again when the file changes", async () => {
    await setUp({});
    await writeFile(path.join(project, '.mcp.json'), JSON.stringify({ mcpServers: { notes: notes() } }));
    const text = await readFile(path.join(project, '.mcp.json'), 'utf8');
    await mkdir(configDir, { recursive: true });
    await writeFile(
      path.join(configDir, 'mcp-trusted.json'),
      JSON.stringify({ projects: { [await realpath(project)]: hash(text) } }),
    );
    upstream.push({ toolCalls: [call('mcp__notes__write_note', { file: 'p.txt', text: 'project' })] }, { text: 'ok' });
    const run = start(['-p', 'note', '--approval', 'yolo', '--output-format', 'json']);
    expect(await run.exit, run.stderr).toBe(0);
    expect(await readFile(path.join(project, 'p.txt'), 'utf8')).toBe('project');

    await writeFile(path.join(project, '.mcp.json'), `${text}\n`);
    upstream.push({ text: 'ok' });
    const changed = start(['-p', 'note', '--approval', 'yolo', '--output-format', 'stream-json']);
    expect(await changed.exit, changed.stderr).toBe(0);
    expect(changed.events().some((e) => e.type === 'notice' && /not trusted yet/.test(e.text as string))).toBe(true);
  }, 30_000);
  it('reaches a server over streamable HTTP (its headers sent) and calls its tool', async () => {
    const seen: string[] = [];
    // A stateless MCP endpoint on 127.0.0.1: a server and a transport per request (the SDK's
    // stateless shape).
    const http = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      const server = new Server({ name: 'stamps', version: '1.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: 'stamp', description: 'Stamp a file.', inputSchema: { type: 'object', properties: {} } }],
      }));
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        if (request.params.arguments?.big) return { content: [{ type: 'text', text: 'x'.repeat(50_000) }] };
        await writeFile(path.join(project, 'stamped.txt'), 'stamped over HTTP');
        return { content: [{ type: 'text', text: 'stamped' }] };
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      void server.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
      await setUp({ stamps: { type: 'http', url, headers: { authorization: 'Bearer mcp-token' } } });
      upstream.push({ toolCalls: [call('mcp__stamps__stamp', {})] }, { text: 'stamped it' });
      const run = start(['-p', 'stamp', '--approval', 'yolo', '--output-format', 'json']);
      expect(await run.exit, run.stderr).toBe(0);
      expect(await readFile(path.join(project, 'stamped.txt'), 'utf8')).toBe('stamped over HTTP');
      expect(upstream.requests.at(-1)!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'stamped' });
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set(['Bearer mcp-token']));

      // An answer over mcp_message_bytes is cut off: the call answers an error.
      await writeFile(path.join(configDir, 'config.json'), JSON.stringify({ limits: { mcp_message_bytes: 10_000 } }));
      upstream.push({ toolCalls: [call('mcp__stamps__stamp', { big: true })] }, { text: 'too big' });
      const big = start(['-p', 'big', '--approval', 'yolo', '--output-format', 'json']);
      expect(await big.exit, big.stderr).toBe(0);
      expect(upstream.requests.at(-1)!.messages.at(-1)!.content).toMatch(/^error: the MCP server "stamps" failed: /);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  }, 30_000);

  it.skipIf(tmuxMissing !== null)(
    "in a terminal: asks to trust the project's .mcp.json, then asks before its tool (yes for the session covers the tool)",
    async () => {
      await setUp({});
      const pidFile = path.join(tmp, 'screen-notes.pid');
      await writeFile(path.join(project, '.mcp.json'), JSON.stringify({ mcpServers: { notes: notes(pidFile) } }));
      const term = openTerminal('mcp', project, { ...env, TOLLGATE_CONFIG_DIR: configDir });
      try {
        term.type(`node ${path.join(repoRoot, 'bin/tollgate.mjs')} code`);
        term.press('Enter');
        await term.shows('the trust question', /This project's \.mcp\.json starts MCP servers .*notes: /);
        term.type('y');
        term.press('Enter');
        await term.shows('the prompt', /› $/m);
        upstream.push(
          { toolCalls: [call('mcp__notes__write_note', { file: 'one.txt', text: 'first' })] },
          { toolCalls: [call('mcp__notes__write_note', { file: 'two.txt', text: 'second' })] },
          { text: 'Both notes written.' },
        );
        term.type('write two notes');
        term.press('Enter');
        await term.shows(
          'the question for the MCP tool',
          "Call this MCP tool? y yes · a yes, and don't ask again this session for mcp__notes__write_note · t no, and say what to do instead · n no [y/a/t/N]",
        );
        expect(term.screen()).toContain('● mcp__notes__write_note {"file":"one.txt","text":"first"}');
        term.type('a');
        term.press('Enter');
        await term.shows('the answer', /Both notes written\.\n(.*\n)*─ sim-chat/);
        expect(term.screen().match(/Call this MCP tool\?/g)).toHaveLength(1);
        expect(await readFile(path.join(project, 'two.txt'), 'utf8')).toBe('second');
        term.type('/mcp');
        term.press('Enter');
        await term.shows('/mcp', /notes: .*notes-server\.mjs · 3 tools/);
        await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-mcp.txt'), term.screen()).catch(
          () => undefined,
        );
        term.type('/exit');
        term.press('Enter');
        const pid = Number(await readFile(pidFile, 'utf8'));
        await until('the server stopped with the agent', () => !alive(pid));
      } finally {
        term.close();
      }
    },
    60_000,
  );
});
