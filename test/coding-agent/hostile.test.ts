import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { prepare } from '../../src/coding-agent/tools/index.js';
import { DEFAULT_LIMITS } from '../../src/coding-agent/limits.js';
import { painter } from '../../src/coding-agent/render.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { agent, type AgentRun } from './agent-process.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';

// Hostile project files and a hostile model: nothing outside the project is written or sent, even
// through a link, and no output format prints a control character raw. Each case failed on the
// agent before these checks.
describe('tollgate code against hostile project files', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let outside: string;
  let env: Record<string, string>;
  const runs: AgentRun[] = [];
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
  const start = (args: string[]) => {
    const run = agent(args, env, project);
    runs.push(run);
    return run;
  };

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-hostile-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    const { secret } = await gateway.tenant();
    env = { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret, TOLLGATE_CONFIG_DIR: path.join(tmp, 'config') };
  }, 60_000);
  afterEach(async () => {
    for (const run of runs.splice(0)) run.kill();
    await rm(project, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  async function newProject(): Promise<void> {
    project = await mkdtemp(path.join(tmp, 'project-'));
    outside = await mkdtemp(path.join(tmp, 'outside-'));
  }

  it('does not write through a dangling link leading out (auto-edit -p declines it; ask mode asks it as outside)', async () => {
    await newProject();
    await symlink(path.join(outside, 'planted.md'), path.join(project, 'notes.md'));
    await symlink('../nowhere/deeper.md', path.join(project, 'relative.md'));
    upstream.push(
      {
        toolCalls: [
          call('write_file', { path: 'notes.md', content: 'planted' }),
          call('write_file', { path: 'relative.md', content: 'planted' }),
        ],
      },
      { text: 'could not' },
    );
    const run = start(['-p', 'write the notes', '--approval', 'auto-edit', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);
    await expect(readFile(path.join(outside, 'planted.md'), 'utf8')).rejects.toThrow(/ENOENT/);
    const answers = upstream.requests
      .at(-1)!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => m.content as string);
    expect(answers).toEqual(['refused: the user declined this call', 'refused: the user declined this call']);
    const notices = run.events().filter((e) => e.type === 'notice');
    expect(notices[0]!.text).toContain(`Allow access outside the project (${project}/notes.md)?`);

    // In ask mode the question names the path as outside the project, not as an edit inside it.
    const ctx = { root: project, limits: DEFAULT_LIMITS, paint: painter(false) };
    const prepared = await prepare(ctx, 'write_file', JSON.stringify({ path: 'notes.md', content: 'x' }));
    expect(prepared.outside).toEqual([path.join(project, 'notes.md')]);
  });

  it('does not send an AGENTS.md that is a link to a file outside the project', async () => {
    await newProject();
    await writeFile(path.join(outside, 'private.md'), 'PRIVATE-NOTES of the user');
    await symlink(path.join(outside, 'private.md'), path.join(project, 'AGENTS.md'));
    upstream.push({ text: 'hello' });
    const run = start(['-p', 'hi']);
    expect(await run.exit, run.stderr).toBe(0);
    const system = upstream.requests.at(-1)!.messages[0]!.content as string;
    expect(system).toContain('Project folder:');
    expect(system).not.toContain('PRIVATE-NOTES');
    expect(system).not.toContain("The project's AGENTS.md");
  });

  it.each(['stream-json', 'json'])('escapes C1 control characters (U+009B) in --output-format %s', async (format) => {
    await newProject();
    upstream.push({ text: 'red \u009b31m and \u001b[2J clear \u0085 next', toolCalls: [] });
    const run = start(['-p', 'say it', '--output-format', format]);
    expect(await run.exit, run.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex
    expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(run.stdout).toContain('\\u009b31m');
    const last = format === 'json' ? (JSON.parse(run.stdout) as { text: string }) : run.events().at(-1)!;
    expect(last.text).toBe('red \u009b31m and \u001b[2J clear \u0085 next'); // the same value, escaped
  });
});
