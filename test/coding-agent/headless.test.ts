import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { until } from '../helpers/wait.js';
import { agent, type AgentRun } from './agent-process.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';

// `tollgate code -p` end to end: the real gateway (billing, limits, usage
// records) in front of a scripted upstream, the agent as a child process in
// a temporary project folder.
describe('tollgate code -p through the gateway', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let env: Record<string, string>;
  const runs: AgentRun[] = [];

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-code-'));
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
    upstream.release();
    await rm(project, { recursive: true, force: true });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  async function newProject(files: Record<string, string>): Promise<string> {
    project = await mkdtemp(path.join(tmp, 'project-'));
    for (const [name, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(project, name)), { recursive: true });
      await writeFile(path.join(project, name), content);
    }
    return project;
  }
  const start = (args: string[], extra: Record<string, string> = {}) => {
    const run = agent(args, { ...env, ...extra }, project);
    runs.push(run);
    return run;
  };
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });

  it('reads, searches, edits and runs a command; the files change as the script says; the costs printed are the usage records', async () => {
    await newProject({
      'src/greet.ts': 'export const greeting = "hello";\nexport const name = "world";\n',
      'AGENTS.md': 'Run tests with `cat src/greet.ts`.\n',
    });
    upstream.push(
      { reasoning: 'Let me look.', toolCalls: [call('read_file', { path: 'src/greet.ts' })] },
      { toolCalls: [call('search', { pattern: 'greeting' })] },
      { toolCalls: [call('edit_file', { path: 'src/greet.ts', old_string: '"hello"', new_string: '"goodbye"' })] },
      { toolCalls: [call('run_command', { command: 'cat src/greet.ts > seen.txt && echo ran' })] },
      { text: 'Changed the greeting.' },
    );
    const run = start(['-p', 'change the greeting', '--approval', 'yolo', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);

    expect(await readFile(path.join(project, 'src/greet.ts'), 'utf8')).toBe(
      'export const greeting = "goodbye";\nexport const name = "world";\n',
    );
    expect(await readFile(path.join(project, 'seen.txt'), 'utf8')).toContain('"goodbye"');
    const sent = upstream.requests.slice(-5);
    const system = sent[0]!.messages[0]!.content as string;
    expect(system).toContain('Run tests with `cat src/greet.ts`.'); // AGENTS.md
    expect(system).toMatch(/Files:\n(.*\n)*src\/greet\.ts/);
    const toolAnswers = sent[4]!.messages.filter((m) => m.role === 'tool').map((m) => m.content as string);
    expect(toolAnswers[0]).toContain('1\texport const greeting = "hello";');
    expect(toolAnswers[1]).toContain('src/greet.ts:1:export const greeting');
    expect(toolAnswers[2]).toBe('edited src/greet.ts');
    expect(toolAnswers[3]).toMatch(/ran\n\[exit code 0\]/);

    const events = run.events();
    const result = events.at(-1)!;
    expect(result).toMatchObject({ type: 'result', status: 'done', is_error: false, text: 'Changed the greeting.' });
    const turns = events.filter((e) => e.type === 'turn');
    expect(turns).toHaveLength(5);
    await gateway.charged();
    const records = (await (
      await fetch(`${gateway.baseURL}/usage/requests?limit=500`, {
        headers: { authorization: `Bearer ${env.TOLLGATE_API_KEY}` },
      })
    ).json()) as {
      data: Array<{ id: string; cost_nanos: string; prompt_tokens: number; completion_tokens: number }>;
    };
    for (const turn of turns) {
      const record = records.data.find((r) => r.id === turn.request_id);
      expect(record, `usage record ${String(turn.request_id)}`).toBeDefined();
      expect({ cost: turn.cost_nanos, prompt: turn.prompt_tokens, completion: turn.completion_tokens }).toEqual({
        cost: record!.cost_nanos,
        prompt: record!.prompt_tokens,
        completion: record!.completion_tokens,
      });
    }
    const total = turns.reduce((sum, t) => sum + BigInt(t.cost_nanos as string), 0n);
    expect(result.cost_nanos).toBe(total.toString());
  });

  it('refuses a non-unique edit and a path outside the folder (a symbolic link too), with the reasons', async () => {
    await newProject({ 'twice.txt': 'x = 1\nx = 1\n' });
    await writeFile(path.join(tmp, 'secret.txt'), 'the secret');
    await symlink(tmp, path.join(project, 'up'));
    upstream.push(
      {
        toolCalls: [
          call('edit_file', { path: 'twice.txt', old_string: 'x = 1', new_string: 'x = 2' }),
          call('read_file', { path: '../secret.txt' }),
          call('read_file', { path: 'up/secret.txt' }),
        ],
      },
      { toolCalls: [call('write_file', { path: 'up/planted.txt', content: 'planted' })] },
      { text: 'I could not.' },
    );
    const run = start(['-p', 'try', '--approval', 'yolo', '--output-format', 'json']);
    expect(await run.exit, run.stderr).toBe(0);
    const answers = upstream.requests
      .at(-2)!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => m.content as string);
    expect(answers[0]).toBe(
      'refused: old_string occurs 2 times in twice.txt: include more surrounding lines so it is unique',
    );
    expect(answers[1]).toMatch(/^refused: the user declined this call/);
    expect(answers[2]).toMatch(/^refused: the user declined this call/);
    expect(answers.join('\n')).not.toContain('the secret');
    expect(run.stderr + run.stdout).not.toContain('the secret');
    await expect(readFile(path.join(tmp, 'planted.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(await readFile(path.join(project, 'twice.txt'), 'utf8')).toBe('x = 1\nx = 1\n');
  });

  it('in ask mode with -p declines an edit and a command, and says which mode allows them', async () => {
    await newProject({ 'a.txt': 'one\n' });
    upstream.push(
      {
        toolCalls: [
          call('edit_file', { path: 'a.txt', old_string: 'one', new_string: 'two' }),
          call('run_command', { command: 'touch ran.txt' }),
        ],
      },
      { text: 'ok' },
    );
    const run = start(['-p', 'edit', '--output-format', 'text']);
    expect(await run.exit).toBe(0);
    expect(run.stdout).toBe('ok\n');
    expect(run.stderr).toContain('pass --approval auto-edit (edits) or yolo (edits and commands)');
    expect(await readFile(path.join(project, 'a.txt'), 'utf8')).toBe('one\n');
    await expect(readFile(path.join(project, 'ran.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('strips the control sequences of a hostile model before they reach the terminal', async () => {
    await newProject({});
    upstream.push({ text: 'safe \u001b]0;pwned\u0007title \u001b[2J\u001b[31mred\u001b[0m \u009b31m done\r\n' });
    const run = start(['-p', 'say it']);
    expect(await run.exit).toBe(0);
    expect(run.stdout).toBe('safe title red 31m done\n');
    // eslint-disable-next-line no-control-regex
    expect(run.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });

  it('compacts the conversation before it reaches the model context (sim-chat: 8192 tokens, compact_percent 80)', async () => {
    await newProject({ 'a.txt': 'alpha\n' });
    upstream.push(
      // Reported usage is held to the call's bounds (prompt: its bytes; completion: max_tokens), as
      // the gateway does.
      { toolCalls: [call('read_file', { path: 'a.txt' })], usage: { prompt: 100, completion: 6600 } },
      { text: 'Task: read a.txt. Done: read it (alpha).' },
      { text: 'finished after compaction' },
    );
    const run = start(['-p', 'read a.txt', '--approval', 'yolo', '--output-format', 'stream-json']);
    expect(await run.exit, run.stderr).toBe(0);
    expect(run.events().filter((e) => e.type === 'notice')).toEqual([
      { type: 'notice', text: expect.stringContaining('compacting the conversation') as unknown },
    ]);
    const [summarise, after] = upstream.requests.slice(-2);
    expect(summarise!.tools).toBeUndefined();
    expect(summarise!.messages.at(-1)!.content).toMatch(/^Summarise this conversation/);
    expect(after!.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(after!.messages[1]!.content).toContain('Task: read a.txt. Done: read it (alpha).');
    expect(run.events().at(-1)).toMatchObject({ status: 'done', text: 'finished after compaction' });
  });

  it('waits out a 429 for the Retry-After the gateway sends, saying so', async () => {
    await newProject({});
    const { secret } = await gateway.tenant({ key: { maxConcurrency: 1 } });
    upstream.push({ text: 'held', hold: true }, { text: 'after the wait' });
    // A stream of the same key held open: the agent's request is one too many in flight.
    const blocker = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hold' }], stream: true }),
    });
    const run = start(['-p', 'go', '--output-format', 'stream-json'], { TOLLGATE_API_KEY: secret });
    const waiting = await until('the agent says it waits', () => run.events().find((e) => e.type === 'waiting'));
    expect(waiting).toMatchObject({ seconds: 1, message: expect.stringContaining('requests in flight') as unknown });
    upstream.release();
    await blocker.text();
    expect(await run.exit, run.stderr).toBe(0);
    expect(run.events().at(-1)).toMatchObject({ status: 'done', text: 'after the wait' });
  });

  it('stops at a 402 with the top-up hint, and at a 401 saying the key is wrong or revoked', async () => {
    await newProject({});
    const { secret } = await gateway.tenant({ credit: '0' });
    const broke = start(['-p', 'go'], { TOLLGATE_API_KEY: secret });
    expect(await broke.exit).toBe(1);
    // Money first: the call the wallet cannot pay is not started (an empty wallet's 402 is not
    // reached).
    expect(broke.stderr).toContain('not started: the wallet cannot pay for this turn');
    expect(broke.stderr).toContain('and the wallet has 0.00 USD. Top up');
    const wrong = start(['-p', 'go'], { TOLLGATE_API_KEY: 'tg-not-a-key' });
    expect(await wrong.exit).toBe(1);
    expect(wrong.stderr).toContain('wrong, expired or revoked');
  });

  it("--session ID resumes that session (its conversation sent again); another folder's session is refused, saying where", async () => {
    const first = await newProject({});
    upstream.push({ text: 'first answer' }, { text: 'second answer' });
    const run = start(['-p', 'remember the word kumquat', '--output-format', 'json']);
    expect(await run.exit, run.stderr).toBe(0);
    const id = (JSON.parse(run.stdout) as { session_id: string }).session_id;
    const again = start(['-p', 'which word?', '--session', id, '--output-format', 'json']);
    expect(await again.exit, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ session_id: id, text: 'second answer' });
    const sent = upstream.requests.at(-1)!.messages.map((m) => [m.role, m.content]);
    expect(sent.slice(1)).toEqual([
      ['user', 'remember the word kumquat'],
      ['assistant', 'first answer'],
      ['user', 'which word?'],
    ]);

    const other = await mkdtemp(path.join(tmp, 'other-'));
    const elsewhere = agent(['-p', 'go on', '--session', id], env, other);
    runs.push(elsewhere);
    expect(await elsewhere.exit).toBe(1);
    expect(elsewhere.stderr).toContain(
      `session ${id} was started in ${first}, not here: its tools would work on this folder's files. Resume it there: cd "${first}" && tollgate code --session ${id}`,
    );
    await rm(other, { recursive: true, force: true });
  });

  it('-p prints text, JSON or stream-JSON, and exits 2 on a bad command line', async () => {
    await newProject({});
    upstream.push({ text: 'plain answer' }, { text: 'json answer' }, { reasoning: 'hmm', text: 'streamed answer' });
    const text = start(['-p', 'a']);
    expect(await text.exit).toBe(0);
    expect(text.stdout).toBe('plain answer\n');
    const json = start(['-p', 'b', '--output-format', 'json']);
    expect(await json.exit).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'done',
      is_error: false,
      text: 'json answer',
      model: 'sim-chat',
      currency: 'USD',
    });
    const stream = start(['-p', 'c', '--output-format', 'stream-json']);
    expect(await stream.exit).toBe(0);
    const types = stream.events().map((e) => e.type);
    expect(types).toEqual(['reasoning', 'text', 'text', 'turn', 'result']);
    const unknown = start(['-p', 'd', '-m', 'no-such-model']);
    expect(await unknown.exit).toBe(1);
    expect(unknown.stderr).toContain('the key cannot call "no-such-model"; its models: sim-chat, sim-reasoner');
    const bad = start(['-p', 'd', '--output-format', 'xml']);
    expect(await bad.exit).toBe(2);
    expect(bad.stderr).toContain('--output-format must be one of text, json, stream-json');
  });
});
