import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';
import { openTerminal, type Terminal, tmuxMissing } from './terminal.js';

// What a person sees, in a 200x50 terminal: markdown rendered, a paste as one message, @path
// attached, a tool call as one line (expanded on demand), and the status line.
describe.skipIf(tmuxMissing !== null)('tollgate code’s screen, in tmux', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let term: Terminal;
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
  const lastUserMessage = () =>
    upstream.requests
      .at(-1)!
      .messages.filter((m) => m.role === 'user')
      .at(-1)!.content as string;

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-screen-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    const { secret } = await gateway.tenant();
    const project = path.join(tmp, 'project');
    await mkdir(project);
    await writeFile(path.join(project, 'README.md'), '# Calc\n\nREADME-MARKER: run node calc.js\n');
    await writeFile(path.join(project, 'calc.js'), Array.from({ length: 12 }, (_, i) => `// line ${i + 1}`).join('\n'));
    term = openTerminal('screen', project, {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_API_KEY: secret,
      TOLLGATE_CONFIG_DIR: path.join(tmp, 'config'),
    });
    term.type(`node ${path.join(repoRoot, 'bin/tollgate.mjs')} code`);
    term.press('Enter');
    await term.shows('the banner', /tollgate code · model sim-chat/);
  }, 60_000);
  afterAll(async () => {
    // What the tests saw, to read.
    if (term)
      await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-screen.txt'), term.screen()).catch(
        () => undefined,
      );
    term?.close();
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('shows the status line, with the wallet, from the start: before the first task', async () => {
    await term.shows(
      'the status line under the banner',
      /Ctrl-C cancels\n─ sim-chat · mode ask · session 0\.00 USD · wallet 5\.00 USD\n› /,
    );
  });

  it('renders the markdown of an answer: no raw **, ## or fences, the code block highlighted', async () => {
    upstream.push({
      text: '## Summary\n\nThe **sum** is computed in `add`.\n\n```js\nfunction add(a, b) {\n  return a + b;\n}\n```\n\n- first point\n- second point\n',
    });
    term.type('explain calc');
    term.press('Enter');
    await term.shows(
      'the answer and the status line',
      /second point\n(.*\n)*─ sim-chat · mode ask · session 0\.\d+ USD · wallet 4\.99\d* USD/,
    );
    // The time the task took and what it cost, under its last figures, above the status line.
    expect(term.screen()).toMatch(
      /second point\n↳ \d+ in · \d+ out · (0\.\d+) USD · session \1 USD\nworked \d+\.\ds · this task \1 USD\n─ sim-chat/,
    );
    const answer = term.screen().split('explain calc')[1]!;
    expect(answer).toContain('Summary');
    expect(answer).toContain('The sum is computed in add.');
    expect(answer).toContain('function add(a, b) {');
    expect(answer).not.toMatch(/\*\*|##|```/);
    const colours = term.screen(true);
    expect(colours).toMatch(new RegExp(`${String.fromCharCode(27)}\\[[\\d;]*m[^\\n]*function`)); // the code highlighted
  });

  it('sends a 3-line bracketed paste as one message, and Ctrl-J makes a new line', async () => {
    upstream.push({ text: 'Got the three lines.' });
    term.paste('first line of the paste\nsecond line\nthird line');
    term.press('C-j');
    term.type('and a typed fourth');
    await term.shows('the paste on the prompt line', 'third line␤and a typed fourth');
    term.press('Enter');
    await term.shows('the answer', 'Got the three lines.');
    expect(lastUserMessage()).toBe('first line of the paste\nsecond line\nthird line\nand a typed fourth');
  });

  it('attaches an @path mention, completed with Tab', async () => {
    upstream.push({ text: 'It says to run calc.' });
    term.type('what does @REA');
    term.press('Tab');
    await term.shows('the path completed', 'what does @README.md');
    term.type(' say?');
    term.press('Enter');
    await term.shows('the attachment said', 'attached README.md (4 lines)');
    await term.shows('the answer', 'It says to run calc.');
    expect(lastUserMessage()).toContain('<file path="README.md">\n# Calc\n\nREADME-MARKER: run node calc.js\n');
  });

  it('shows a tool call as one line, and /expand shows its whole result', async () => {
    upstream.push({ toolCalls: [call('read_file', { path: 'calc.js' })] }, { text: 'Read it.' });
    term.type('read calc.js');
    term.press('Enter');
    await term.shows('the answer', 'Read it.');
    const shown = term.screen();
    expect(shown).toMatch(/● read calc\.js\n {2}⎿ +1 +\/\/ line 1 \(\+11 lines, \/expand\)/);
    expect(shown).not.toContain('// line 2');
    term.type('/expand');
    term.press('Enter');
    await term.shows('the whole result', /12 +\/\/ line 12/);
  });
});
