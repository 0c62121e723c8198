import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';
import { openTerminal, type Terminal, tmuxMissing } from './terminal.js';

// Approvals remembered for the session, /undo of a turn's files, and sessions shown again on
// resuming, in a 200x50 terminal against the gateway (its engine a scripted upstream), the screens
// read.
describe.skipIf(tmuxMissing !== null)('tollgate code: approvals, undo and sessions, in tmux', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let term: Terminal;
  const bin = path.join(repoRoot, 'bin/tollgate.mjs');
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
  const file = (name: string) => readFile(path.join(project, name), 'utf8');
  /** The screen after the last time `marker` was typed. */
  const after = (marker: string) => term.screen().split(marker).at(-1)!;
  /** The screen, kept in test-results/ for reading (when that folder exists). */
  const keep = (name: string) =>
    writeFile(path.join(repoRoot, 'test-results', `tollgate-code-${name}.txt`), term.screen()).catch(() => undefined);
  const task = async (text: string, answer: string) => {
    term.type(text);
    term.press('Enter');
    await term.shows(`the answer to "${text}"`, new RegExp(`${answer}\\n(.*\\n)*─ sim-chat · mode ask`));
  };

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-sessions-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    const { secret } = await gateway.tenant();
    project = path.join(tmp, 'project');
    await mkdir(project);
    await writeFile(path.join(project, 'hello.txt'), 'hello world\n');
    await writeFile(path.join(project, 'test.sh'), 'echo tests pass\n');
    term = openTerminal('sessions', project, {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_API_KEY: secret,
      TOLLGATE_CONFIG_DIR: path.join(tmp, 'config'),
    });
    term.type(`node ${bin} code`);
    term.press('Enter');
    await term.shows('the banner', /tollgate code · model sim-chat/);
  }, 60_000);
  afterAll(async () => {
    term?.close();
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('"yes for this session" to an edit, then the same edit again without a question; a command by its prefix', async () => {
    upstream.push(
      { toolCalls: [call('edit_file', { path: 'hello.txt', old_string: 'hello world', new_string: 'hello there' })] },
      { text: 'First edit done.' },
    );
    term.type('change the greeting');
    term.press('Enter');
    await term.shows(
      'the question with a yes for the session',
      "Apply this change? y yes · a yes, and don't ask again this session for edit_file · t no, and say what to do instead · n no [y/a/t/N]",
    );
    term.type('a');
    term.press('Enter');
    await term.shows('the first answer', /First edit done\.\n(.*\n)*─ sim-chat/);

    upstream.push(
      { toolCalls: [call('edit_file', { path: 'hello.txt', old_string: 'hello there', new_string: 'hello again' })] },
      { text: 'Second edit done.' },
    );
    await task('change it again', 'Second edit done.');
    expect(after('change it again')).toContain('● edit hello.txt');
    expect(after('change it again')).not.toContain('Apply this change?');
    expect(await file('hello.txt')).toBe('hello again\n');

    // A command: yes for its prefix `sh test.sh`; the same prefix then runs, a chained command asks
    // again.
    upstream.push({ toolCalls: [call('run_command', { command: 'sh test.sh' })] }, { text: 'Tests ran.' });
    term.type('run the tests');
    term.press('Enter');
    await term.shows(
      'the command’s question',
      'a yes, and don\'t ask again this session for commands starting with "sh test.sh"',
    );
    term.type('a');
    term.press('Enter');
    await term.shows('the command ran', /Tests ran\.\n(.*\n)*─ sim-chat/);
    upstream.push(
      { toolCalls: [call('run_command', { command: 'sh test.sh --verbose' })] },
      { toolCalls: [call('run_command', { command: 'sh test.sh && touch chained.txt' })] },
      { text: 'Done with commands.' },
    );
    term.type('run them twice');
    term.press('Enter');
    await term.shows(
      'the chained command asked, with no yes for the session',
      /Run this command\? y yes · t no, and say what to do instead · n no \[y\/t\/N\] $/m,
    );
    expect(after('run them twice')).toMatch(/● \$ sh test\.sh --verbose\n {2}⎿ tests pass/);
    term.type('n');
    term.press('Enter');
    await term.shows('the end of the commands', /Done with commands\.\n(.*\n)*─ sim-chat/);
    await expect(file('chained.txt')).rejects.toThrow(/ENOENT/);
    await keep('approvals');
  }, 60_000);

  it('/undo puts back the file a turn edited and removes the file it created, and says which', async () => {
    upstream.push(
      {
        toolCalls: [
          call('edit_file', { path: 'hello.txt', old_string: 'hello again', new_string: 'goodbye' }),
          call('write_file', { path: 'notes/new.txt', content: 'a new file\n' }),
        ],
      },
      { text: 'Edited and created.' },
    );
    term.type('edit and create');
    term.press('Enter');
    await until(
      'the write’s question',
      () => after('edit and create').includes('for write_file · t no, and say what to do instead · n no [y/a/t/N]'),
      {
        detail: () => term.screen(),
      },
    );
    term.type('y');
    term.press('Enter');
    await term.shows('the answer', /Edited and created\.\n(.*\n)*─ sim-chat/);
    expect(await file('hello.txt')).toBe('goodbye\n');
    expect(await file('notes/new.txt')).toBe('a new file\n');

    term.type('/undo');
    term.press('Enter');
    await term.shows('what was undone', 'restored hello.txt\nremoved notes/new.txt (the turn created it)');
    expect(await file('hello.txt')).toBe('hello again\n');
    await expect(file('notes/new.txt')).rejects.toThrow(/ENOENT/);

    // The model is told with the next task.
    upstream.push({ text: 'Noted the undo.' });
    await task('go on', 'Noted the undo.');
    const told = upstream.requests.at(-1)!.messages.at(-1)!.content as string;
    expect(told).toMatch(/^\[The user undid the file changes of a turn: restored hello\.txt; removed notes\/new\.txt/);
    expect(told.endsWith('go on')).toBe(true);
    await keep('undo');
  }, 60_000);

  it('--continue shows the earlier conversation; /resume and --resume pick a session from a list', async () => {
    term.type('/exit');
    term.press('Enter');
    await term.shows('the agent left', /kept: resume with tollgate code --continue\n/);
    term.press('C-l');
    term.type(`clear; tmux clear-history 2>/dev/null; node ${bin} code --continue`);
    term.press('Enter');
    await term.shows('the resumed transcript', /resumed session \d{8}-\d{6}-[0-9a-f]{6} · model sim-chat/);
    const shown = term.screen();
    expect(shown).toContain('── earlier in this session (change the greeting) ──');
    expect(shown).toMatch(/› change the greeting\n {2}● edit hello\.txt\n {2}First edit done\./);
    expect(shown).toContain('  ● $ sh test.sh && touch chained.txt (refused)');
    expect(shown).toMatch(/› go on\n {2}Noted the undo\.\n── resumed ──/);
    await keep('continue');

    // A second session, then the picker lists the first.
    term.type('/clear');
    term.press('Enter');
    upstream.push({ text: 'Second session answer.' });
    await task('a second session task', 'Second session answer.');
    term.type('/resume');
    term.press('Enter');
    await term.shows('the picker', /resume which\? \(1-1, Enter for none\) $/m);
    expect(after('/resume')).toMatch(/ {2}1 {2}\d{4}-\d\d-\d\d \d\d:\d\d +0\.\d+ USD {2}change the greeting/);
    term.type('1');
    term.press('Enter');
    await term.shows('the first session resumed', /› go on\n {2}Noted the undo\.\n── resumed ──\n.*resumed session/);

    term.type('/exit');
    term.press('Enter');
    await term.shows('the agent left again', /\/exit\n\nsession \S+ kept/);
    term.type(`node ${bin} code --resume`);
    term.press('Enter');
    await term.shows('the picker from the command line', /resume which\? \(1-2, Enter for none\) $/m);
    // The latest first: the second session, then the first (its cost the larger).
    expect(after('code --resume')).toMatch(
      /# {2}last used \(UTC\) +cost {2}first task\n {2}1 .* {2}a second session task\n {2}2 .*0\.\d+ USD {2}change the greeting\n/,
    );
    term.type('1');
    term.press('Enter');
    await term.shows(
      'the second session resumed',
      /› a second session task\n {2}Second session answer\.\n── resumed ──/,
    );
    await keep('resume');
  }, 60_000);
});
