import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide, scopeOf, SessionApprovals } from '../../src/coding-agent/approval.js';
import { DEFAULT_LIMITS, limitsFrom } from '../../src/coding-agent/limits.js';
import { painter } from '../../src/coding-agent/render.js';
import { prepare, ripgrepPath, type ToolContext } from '../../src/coding-agent/tools/index.js';
import { prepareSearch } from '../../src/coding-agent/tools/search.js';

describe('the agent tools, on a temporary project', () => {
  let tmp: string;
  let ctx: ToolContext;
  const run = async (name: string, args: Record<string, unknown>) =>
    (await prepare(ctx, name, JSON.stringify(args))).run(new AbortController().signal);

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-tools-'));
    const root = path.join(tmp, 'project');
    await mkdir(path.join(root, 'src'), { recursive: true });
    await writeFile(path.join(root, 'src/a.ts'), Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n'));
    await writeFile(path.join(root, 'src/b.md'), 'needle here\nnothing\n');
    await writeFile(path.join(tmp, 'outside.txt'), 'outside');
    await symlink(tmp, path.join(root, 'escape'));
    ctx = {
      root,
      limits: { ...DEFAULT_LIMITS, tool_output_chars: 200, shell_timeout_seconds: 1 },
      paint: painter(false),
    };
  });
  afterAll(() => rm(tmp, { recursive: true, force: true }));

  it('reads with offset and limit, lines numbered, and says how to read on', async () => {
    const text = await run('read_file', { path: 'src/a.ts', offset: 10, limit: 2 });
    expect(text).toBe('10\tline 10\n11\tline 11\n[30 lines in all; read on with offset 12]');
  });

  it('lists with a glob', async () => {
    expect(await run('list_files', { pattern: 'src/*.md' })).toBe('src/b.md');
  });

  // ripgrep when it is on PATH (Debian's ripgrep), the built-in search otherwise: the same answers.
  it.each([
    ['built-in', null],
    ['ripgrep', ripgrepPath()],
  ])('searches with the %s search', async (_name, rg) => {
    if (_name === 'ripgrep' && !rg) return console.warn('ripgrep is not on PATH: its search is not tested');
    const search = async (args: Record<string, unknown>) =>
      (await prepareSearch(ctx, args, rg)).run(new AbortController().signal);
    expect(await search({ pattern: 'need.e', glob: '**/*.md' })).toBe('src/b.md:1:needle here');
    expect(await search({ pattern: 'needle', path: 'src' })).toBe('src/b.md:1:needle here');
    expect(await search({ pattern: 'absent-text' })).toBe('no matches');
  });

  it('refuses an edit whose string is absent or not unique, with the reason; applies a unique one and shows its diff', async () => {
    await expect(
      prepare(ctx, 'edit_file', JSON.stringify({ path: 'src/a.ts', old_string: 'absent', new_string: 'x' })),
    ).rejects.toThrow('old_string was not found in src/a.ts');
    await expect(
      prepare(ctx, 'edit_file', JSON.stringify({ path: 'src/a.ts', old_string: 'line 1', new_string: 'x' })),
    ).rejects.toThrow('old_string occurs 11 times in src/a.ts');
    const edit = await prepare(
      ctx,
      'edit_file',
      JSON.stringify({ path: 'src/a.ts', old_string: 'line 30', new_string: 'last line' }),
    );
    expect(edit.preview).toMatch(/^ {2}30 {4}- line 30$/m); // the old file's line 30 removed
    expect(edit.preview).toMatch(/^ {5}30 \+ last line$/m); // the new file's line 30 added
    expect(await readFile(path.join(ctx.root, 'src/a.ts'), 'utf8')).toContain('line 30'); // not before it runs
    await edit.run(new AbortController().signal);
    expect(await readFile(path.join(ctx.root, 'src/a.ts'), 'utf8')).toMatch(/last line$/);
  });

  it('marks paths outside the project, however spelled (.., absolute, a symbolic link), and a new file under a link', async () => {
    for (const where of ['../outside.txt', path.join(tmp, 'outside.txt'), 'escape/outside.txt']) {
      expect((await prepare(ctx, 'read_file', JSON.stringify({ path: where }))).outside, where).toHaveLength(1);
    }
    expect(
      (await prepare(ctx, 'write_file', JSON.stringify({ path: 'escape/new/deep.txt', content: 'x' }))).outside,
    ).toHaveLength(1);
    expect((await prepare(ctx, 'write_file', JSON.stringify({ path: 'src/new.txt', content: 'x' }))).outside).toEqual(
      [],
    );
  });

  it('runs a command in the project, cuts long output saying so, and stops one past its timeout', async () => {
    expect(await run('run_command', { command: 'pwd' })).toBe(`${ctx.root}\n[exit code 0]`);
    const long = await run('run_command', { command: 'seq 1 2000' });
    expect(long).toContain('characters cut here: output is limited to 200 characters (tool_output_chars)');
    expect(long.length).toBeLessThan(400);
    expect(await run('run_command', { command: 'sleep 30' })).toContain(
      '[stopped after 1 s (shell_timeout_seconds or timeout_seconds)]',
    );
  });

  it('refuses unknown tools and arguments that are not a JSON object', async () => {
    await expect(prepare(ctx, 'rm_rf', '{}')).rejects.toThrow('there is no tool "rm_rf"');
    await expect(prepare(ctx, 'read_file', '{"path": "a.ts"')).rejects.toThrow('not valid JSON');
    await expect(prepare(ctx, 'read_file', '[]')).rejects.toThrow('must be a JSON object');
  });
});

describe('approval modes', () => {
  it('ask: reads run, edits and commands ask; auto-edit: edits run; yolo: all run; plan: only reads', () => {
    const table = (['ask', 'auto-edit', 'yolo', 'plan'] as const).map((mode) => [
      mode,
      ...(['read', 'edit', 'command'] as const).map((kind) => decide(mode, kind, []).outcome),
    ]);
    expect(table).toEqual([
      ['ask', 'run', 'ask', 'ask'],
      ['auto-edit', 'run', 'run', 'ask'],
      ['yolo', 'run', 'run', 'run'],
      ['plan', 'run', 'refuse', 'refuse'],
    ]);
  });

  it('asks for a path outside the project in every mode, yolo included', () => {
    expect(decide('yolo', 'read', ['/etc/passwd'])).toEqual({
      outcome: 'ask',
      question: 'Allow access outside the project (/etc/passwd)?',
    });
  });

  it('"yes for this session" covers a tool, or a command\'s prefix but never a chained or redirected command', () => {
    const approvals = new SessionApprovals();
    approvals.allow(scopeOf('edit_file', undefined)!);
    approvals.allow(scopeOf('run_command', 'npm test -- --watch')!);
    expect(approvals.allows('edit_file', undefined)).toBe(true);
    expect(approvals.allows('write_file', undefined)).toBe(false);
    expect(approvals.allows('run_command', 'npm test')).toBe(true);
    expect(approvals.allows('run_command', 'npm  test src/a.test.ts')).toBe(true);
    expect(approvals.allows('run_command', 'npm install left-pad')).toBe(false);
    for (const chained of [
      'npm test; rm -rf x',
      'npm test && curl x',
      'npm test > out',
      'npm test $(rm x)',
      'npm test `x`',
    ])
      expect(approvals.allows('run_command', chained)).toBe(false);
    expect(scopeOf('run_command', 'npm test | tee log')).toBeNull();
    expect(scopeOf('run_command', 'sh test.sh')!.label).toBe('commands starting with "sh test.sh"');
  });

  it('reads limits from the config file, naming a bad one', () => {
    expect(limitsFrom({ tool_output_chars: 500 }).tool_output_chars).toBe(500);
    expect(() => limitsFrom({ tool_output_chars: 0 })).toThrow(
      'limits.tool_output_chars must be a whole number from 1 to',
    );
    expect(() => limitsFrom({ nope: 1 })).toThrow('unknown limit "nope"');
  });
});
