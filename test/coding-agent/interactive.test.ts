import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { requireServices } from '../helpers/services.js';
import { until } from '../helpers/wait.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';

const tmuxPath = ['/usr/bin/tmux', '/usr/local/bin/tmux'].find((file) => {
  try {
    execFileSync(file, ['-V']);
    return true;
  } catch {
    return false;
  }
});
const why = tmuxPath ? null : 'tmux is not installed (apt-get install tmux)';
if (why && requireServices) throw new Error(`REQUIRE_SERVICES=1 but the interactive agent test cannot run: ${why}`);
if (why) console.warn(`skipping the interactive agent test: ${why}`);

// `tollgate code` in a real terminal (tmux), driven as a person would: keys typed, the screen read.
describe.skipIf(why !== null)('tollgate code, interactive, in tmux', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  const socket = `tollgate-code-${process.pid}`;
  const tmux = (...args: string[]) =>
    execFileSync(tmuxPath!, ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  const screen = (colours = false) =>
    tmux('capture-pane', '-p', '-J', ...(colours ? ['-e'] : []), '-S', '-300', '-t', 'agent');
  const type = (text: string) => tmux('send-keys', '-t', 'agent', '-l', text);
  const press = (...keys: string[]) => tmux('send-keys', '-t', 'agent', ...keys);
  const shows = (what: string, text: string | RegExp, timeout = 15_000) =>
    until(what, () => (typeof text === 'string' ? screen().includes(text) : text.test(screen())), {
      timeout,
      detail: () => screen(),
    });
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-tmux-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    const { secret } = await gateway.tenant();
    project = path.join(tmp, 'project');
    await mkdir(project);
    await writeFile(path.join(project, 'hello.txt'), 'hello world\n');
    const env = {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_API_KEY: secret,
      TOLLGATE_CONFIG_DIR: path.join(tmp, 'config'),
      TERM: 'xterm-256color',
      PS1: '$ ',
    };
    // A plain shell in a 120x50 terminal; the agent is typed into it, so its screen stays after it
    // exits.
    tmux(
      'new-session',
      '-d',
      '-s',
      'agent',
      '-x',
      '120',
      '-y',
      '50',
      '-c',
      project,
      ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      'bash --norc --noprofile',
    );
  }, 60_000);
  afterAll(async () => {
    try {
      tmux('kill-server');
    } catch {
      // Already gone.
    }
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('a task with a diff approved and a command denied, a stream cancelled with Ctrl-C, a second Ctrl-C to leave, and --continue', async () => {
    const bin = path.join(repoRoot, 'bin/tollgate.mjs');
    type(`node ${bin} code`);
    press('Enter');
    await shows('the banner', /tollgate code · model sim-chat · mode ask · session \d{8}-\d{6}-[0-9a-f]{6}/);
    const sessionId = /session (\d{8}-\d{6}-[0-9a-f]{6})/.exec(screen())![1]!;
    await shows('the status line from the start', /─ sim-chat · mode ask · session 0\.00 USD · wallet 5\.00 USD\n› $/m);

    upstream.push(
      {
        text: 'I will edit the file.',
        toolCalls: [call('edit_file', { path: 'hello.txt', old_string: 'hello world', new_string: 'hello tollgate' })],
      },
      { toolCalls: [call('run_command', { command: 'touch denied.txt' })] },
      { text: 'Edited hello.txt; the command was declined.' },
    );
    type('change the greeting');
    press('Enter');
    await shows(
      'the diff and its question',
      "Apply this change? y yes · a yes, and don't ask again this session for edit_file · t no, and say what to do instead · n no [y/a/t/N]",
    );
    // The change as a person reads it: numbered old and new lines, - red, + green, no git headers.
    expect(screen()).toMatch(
      /● edit hello\.txt\n {2}hello\.txt \+1 -1\n {2}1 {3}- hello world\n {4}1 \+ hello tollgate\n/,
    );
    expect(screen()).not.toMatch(/^(---|\+\+\+|@@)/m);
    const diff = screen(true);
    // tmux writes the colour then resets the background (49) before the text.
    const colour = (code: number, text: string) => new RegExp(`\\[${code}m(${String.fromCharCode(27)}\\[49m)?${text}`);
    expect(diff).toMatch(colour(31, ' {2}1 {3}- hello world')); // the removed line red
    expect(diff).toMatch(colour(32, ' {4}1 \\+ hello tollgate')); // the added line green
    type('y');
    press('Enter');
    await shows('the command and its question', 'Run this command? y yes');
    expect(screen()).toContain('● $ touch denied.txt');
    // No, and say what instead: the words reach the model as the call's result, in the same turn.
    type('t');
    press('Enter');
    await shows('the question for what instead', /what should it do instead\? $/m);
    type('do not create files, just say what you did');
    press('Enter');
    await shows(
      'the final answer and the wallet',
      /Edited hello\.txt; the command was declined\.\n(.*\n)*.*wallet 4\.99\d* USD/,
    );
    expect(await readFile(path.join(project, 'hello.txt'), 'utf8')).toBe('hello tollgate\n');
    await expect(readFile(path.join(project, 'denied.txt'), 'utf8')).rejects.toThrow(/ENOENT/);
    expect(upstream.requests.at(-1)!.messages.at(-1)).toMatchObject({
      role: 'tool',
      content:
        'refused: the user declined this call and said what to do instead: do not create files, just say what you did',
    });
    expect(screen()).toContain(
      '⎿ refused: the user declined this call and said what to do instead: do not create files',
    );
    expect(screen()).toMatch(/↳ \d+ in · \d+ out · 0\.\d+ USD · session 0\.\d+ USD/);

    upstream.push({ text: 'A long answer that goes on', hold: true });
    type('tell me a story');
    press('Enter');
    await shows('the stream under way', 'A long answer that goes on');
    press('C-c');
    await shows('the cancel', /worked \d+\.\ds\ncancelled \(the gateway bills only what was generated\)/);
    await until('the gateway saw the client leave', () => upstream.hungUp === 1);
    press('C-c');
    await shows('the agent left', `session ${sessionId} kept: resume with tollgate code --continue`);

    upstream.push({ text: 'Resumed: I remember the greeting.' });
    type(`node ${bin} code --continue`);
    press('Enter');
    await until('the resumed banner', () => screen().split(`session ${sessionId}`).length >= 4, {
      detail: () => screen(),
    });
    type('/cost');
    press('Enter');
    await shows(
      'the session cost',
      /session \S+: 0\.\d+ USD billed for 4 requests, \d+ tokens in, \d+ out \(the key's usage records\)\nwallet: 4\.99\d* USD/,
    );
    type('/model');
    press('Enter');
    await shows('the key’s models', '* sim-chat  (context 8192 tokens)');
    type('/mode plan');
    press('Enter');
    await shows('the mode switched', 'mode: plan');
    type('what did you change?');
    press('Enter');
    await shows(
      'the resumed answer and the prompt after it',
      /Resumed: I remember the greeting\.\n(.*\n)*.*wallet .*\n› $/m,
    );
    const resumed = upstream.requests.at(-1)!.messages;
    // plan mode: the model is offered the reading tools only.
    expect(
      (upstream.requests.at(-1)!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
    ).toEqual(['read_file', 'list_files', 'search']);
    expect(resumed.some((m) => m.content === 'change the greeting')).toBe(true);
    expect(
      resumed.some(
        (m) =>
          typeof m.content === 'string' &&
          m.content.startsWith('A long answer that goes on') &&
          m.content.endsWith('[cancelled by the user]'),
      ),
    ).toBe(true);
    type('/exit');
    press('Enter');
    await shows('the agent left again', /› \/exit\n\nsession \S+ kept: resume with tollgate code --continue\n/);
    await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-tmux.txt'), screen()).catch(() => undefined);
  }, 90_000);
});
