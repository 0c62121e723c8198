import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { agent, type AgentRun } from './agent-process.js';

// `tollgate code -p` through the real gateway on the simulator in its scripted
// mode (docs/tool-calling.md): a model per script, a turn per assistant message.
const SESSION = [
  { reasoning: 'Let me look.', tool_calls: [{ name: 'read_file', arguments: { path: 'src/greet.ts' } }] },
  { tool_calls: [{ name: 'search', arguments: { pattern: 'greeting' } }] },
  {
    tool_calls: [
      { name: 'edit_file', arguments: { path: 'src/greet.ts', old_string: '"hello"', new_string: '"goodbye"' } },
    ],
  },
  {
    tool_calls: [
      { name: 'edit_file', arguments: { path: 'twice.txt', old_string: 'x = 1', new_string: 'x = 2' } },
      { name: 'write_file', arguments: { path: '../planted.txt', content: 'planted' } },
    ],
  },
  { tool_calls: [{ name: 'run_command', arguments: { command: 'cat src/greet.ts > seen.txt && echo ran' } }] },
  { content: 'Changed the greeting.' },
];
const CUT = [
  { tool_calls: [{ name: 'write_file', arguments: '{"path": "cut.txt", "conte' }], finish_reason: 'length' },
];

describe('tollgate code -p on the scripted simulator', () => {
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let env: Record<string, string>;
  const runs: AgentRun[] = [];

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-code-sim-'));
    await writeFile(path.join(tmp, 'session.jsonl'), SESSION.map((turn) => JSON.stringify(turn)).join('\n'));
    await writeFile(path.join(tmp, 'cut.jsonl'), CUT.map((turn) => JSON.stringify(turn)).join('\n'));
    const engines = ['session', 'cut'].map((name) => ({
      kind: 'simulator',
      model: `agent-${name}`,
      task: 'chat',
      max_model_len: 8192,
      script: `${name}.jsonl`,
    }));
    await writeFile(path.join(tmp, 'engines.json'), JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    for (const name of ['session', 'cut']) {
      await gateway.services.catalog.add({
        id: `agent-${name}`,
        displayName: `Agent ${name}`,
        hfRepoId: `tollgate-test/agent-${name}`,
        taskType: 'chat',
        contextLength: 8192,
        enabled: true,
      });
      await gateway.services.catalog.setPrice(`agent-${name}`, 150n, 600n);
    }
    const { secret } = await gateway.tenant();
    env = { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret, TOLLGATE_CONFIG_DIR: path.join(tmp, 'config') };
  }, 60_000);
  afterEach(async () => {
    for (const run of runs.splice(0)) run.kill();
    await rm(project, { recursive: true, force: true });
  });
  afterAll(async () => {
    await gateway?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  async function newProject(files: Record<string, string>): Promise<void> {
    project = path.join(tmp, 'project');
    for (const [name, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(project, name)), { recursive: true });
      await writeFile(path.join(project, name), content);
    }
  }
  const start = (args: string[]) => {
    const run = agent(args, env, project);
    runs.push(run);
    return run;
  };

  it('reads, searches, edits and runs a command as the script says, refuses a non-unique edit and a path outside, and prints the costs of the usage records', async () => {
    await newProject({ 'src/greet.ts': 'export const greeting = "hello";\n', 'twice.txt': 'x = 1\nx = 1\n' });
    const run = start([
      '-p',
      'change the greeting',
      '-m',
      'agent-session',
      '--approval',
      'yolo',
      '--output-format',
      'stream-json',
    ]);
    expect(await run.exit, run.stderr).toBe(0);
    expect(await readFile(path.join(project, 'src/greet.ts'), 'utf8')).toBe('export const greeting = "goodbye";\n');
    expect(await readFile(path.join(project, 'seen.txt'), 'utf8')).toBe('export const greeting = "goodbye";\n');
    expect(await readFile(path.join(project, 'twice.txt'), 'utf8')).toBe('x = 1\nx = 1\n');
    await expect(readFile(path.join(tmp, 'planted.txt'), 'utf8')).rejects.toThrow(/ENOENT/);

    const events = run.events();
    const results = events.filter((e) => e.type === 'tool_result').map((e) => [e.name, e.ok, e.output]);
    expect(results).toEqual([
      ['read_file', true, '1\texport const greeting = "hello";\n2\t'],
      ['search', true, expect.stringContaining('src/greet.ts:1:export const greeting = "hello";') as unknown],
      ['edit_file', true, 'edited src/greet.ts'],
      [
        'edit_file',
        false,
        'refused: old_string occurs 2 times in twice.txt: include more surrounding lines so it is unique',
      ],
      ['write_file', false, expect.stringMatching(/^refused: the user declined this call/) as unknown],
      ['run_command', true, 'ran\n[exit code 0]'],
    ]);
    expect(events.filter((e) => e.type === 'reasoning').length).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({ type: 'result', status: 'done', text: 'Changed the greeting.' });

    const turns = events.filter((e) => e.type === 'turn');
    expect(turns).toHaveLength(6);
    await gateway.charged();
    const page = (await (
      await fetch(`${gateway.baseURL}/usage/requests?model=agent-session`, {
        headers: { authorization: `Bearer ${env.TOLLGATE_API_KEY}` },
      })
    ).json()) as {
      data: Array<{ id: string; cost_nanos: string; prompt_tokens: number; completion_tokens: number }>;
    };
    const printed = turns.map((t) => [t.request_id, t.prompt_tokens, t.completion_tokens, t.cost_nanos]).sort();
    const recorded = page.data.map((r) => [r.id, r.prompt_tokens, r.completion_tokens, r.cost_nanos]).sort();
    expect(printed).toEqual(recorded);
  });

  it('does not run a tool call the output limit cut, and exits 1', async () => {
    await newProject({ 'keep.txt': 'kept\n' });
    const run = start(['-p', 'write it', '-m', 'agent-cut', '--approval', 'yolo', '--output-format', 'json']);
    expect(await run.exit).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'cut', is_error: true });
    await expect(readFile(path.join(project, 'cut.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
  });
});
