import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { money, turnCharge } from '../../src/coding-agent/cost.js';
import { renderDiff } from '../../src/coding-agent/diff.js';
import { clean, cut, painter } from '../../src/coding-agent/render.js';
import { duration, withinTime, worked } from '../../src/coding-agent/status-line.js';
import { SessionStore } from '../../src/coding-agent/sessions.js';

describe('sessions on disk', () => {
  let folder: string;
  beforeAll(async () => (folder = await mkdtemp(path.join(os.tmpdir(), 'tollgate-sessions-'))));
  afterAll(() => rm(folder, { recursive: true, force: true }));

  it('saves, loads, lists the latest first, finds the latest of a folder, and keeps files private', async () => {
    const store = new SessionStore(folder);
    const first = store.create('/p/one', 'sim-chat');
    first.messages.push({ role: 'user', content: 'hi' });
    await store.save(first);
    // Sessions are ordered by when they were saved, to the millisecond: two saves in one would tie.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = store.create('/p/two', 'sim-chat');
    await store.save(second);
    expect((await store.load(first.id)).messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect((await store.list()).map((s) => s.id)).toEqual([second.id, first.id]);
    expect((await store.latest('/p/one'))?.id).toBe(first.id);
    expect((await stat(path.join(folder, `${first.id}.json`))).mode & 0o777).toBe(0o600);
    expect((await readdir(folder)).every((name) => name.endsWith('.json'))).toBe(true);
  });

  it('refuses a malformed session file, naming the file and what is wrong', async () => {
    const store = new SessionStore(folder);
    const file = (id: string) => path.join(folder, `${id}.json`);
    await writeFile(file('20260131-120000-aaaaaa'), '{}');
    await expect(store.load('20260131-120000-aaaaaa')).rejects.toThrow(
      `${file('20260131-120000-aaaaaa')} is not a session tollgate code can resume: id: missing`,
    );
    await writeFile(file('20260131-120000-bbbbbb'), '{"id": "20260131-120000-bbbbbb", "cwd": 7');
    await expect(store.load('20260131-120000-bbbbbb')).rejects.toThrow(
      `${file('20260131-120000-bbbbbb')} is not a session tollgate code can resume: not JSON`,
    );
    const session = store.create('/p/three', 'sim-chat');
    await store.save(session);
    const whole = JSON.parse(await readFile(file(session.id), 'utf8')) as Record<string, unknown>;
    await writeFile(file(session.id), JSON.stringify({ ...whole, cwd: 7 }));
    await expect(store.load(session.id)).rejects.toThrow(/is not a session tollgate code can resume: cwd: /);
    await writeFile(file(session.id), JSON.stringify({ ...whole, id: '20260131-120000-cccccc' }));
    await expect(store.load(session.id)).rejects.toThrow(
      `is not a session tollgate code can resume: id: it says 20260131-120000-cccccc, its file name ${session.id}`,
    );
    // A listing skips it rather than failing: the others are still there to resume.
    expect((await store.list()).map((s) => s.id)).not.toContain(session.id);
    await rm(file(session.id));
    await rm(file('20260131-120000-aaaaaa'));
    await rm(file('20260131-120000-bbbbbb'));
  });

  it('refuses a session id that is not one (a path)', async () => {
    await expect(new SessionStore(folder).load('../../etc/passwd')).rejects.toThrow('is not a session id');
  });
});

describe('costs, in nano-units', () => {
  it('is the gateway formula: tokens times the per-token prices, cached ones at theirs, held to the bounds, exactly', () => {
    const price = { inputNanosPerToken: 150n, cachedInputNanosPerToken: 15n, outputNanosPerToken: 600n };
    const call = { bounds: { promptTokens: 5000, completionTokens: 100 }, holdNanos: 5000n * 150n + 100n * 600n };
    const cost = (usage: { promptTokens: number; completionTokens: number; cachedTokens?: number }) =>
      turnCharge(usage, call, price)?.costNanos;
    expect(cost({ promptTokens: 1234, completionTokens: 56 })).toBe(1234n * 150n + 56n * 600n);
    expect(cost({ promptTokens: 1234, cachedTokens: 1024, completionTokens: 56 })).toBe(
      210n * 150n + 1024n * 15n + 56n * 600n,
    );
    // An engine's count above the call's bounds is billed at the bound, as the gateway bills it.
    expect(cost({ promptTokens: 1, completionTokens: 1_000_000 })).toBe(150n + 100n * 600n);
    expect(turnCharge({ promptTokens: 1, completionTokens: 1 }, call, undefined)).toBeNull();
    expect(money(218_700n, 'USD')).toBe('0.0002187 USD');
    // Past 2^53 nanos a float would lose the last unit.
    expect(money(9_007_199_254_740_993n, 'USD')).toBe('9007199.254740993 USD');
  });
});

describe('rendering', () => {
  it('removes control characters and escape sequences but keeps newlines and tabs', () => {
    expect(clean('a\u001b[31mb\u0007c\td\ne\r\u009b1m\u202ex')).toBe('abc\td\ne1mx');
  });

  it('cuts long text in the middle, saying how much and which limit', () => {
    expect(cut('x'.repeat(30), 10, 'tool_output_chars')).toBe(
      `xxxxx\n[… 20 characters cut here: output is limited to 10 characters (tool_output_chars) …]\nxxxxx`,
    );
  });

  it('shows a change with numbered lines, - and + marks, coloured, and no git headers', () => {
    const diff = renderDiff(painter(true), 'a.txt', 'one\ntwo\n', 'one\n2\n');
    expect(diff).toContain('\u001b[31m  2   - two\u001b[39m');
    expect(diff).toContain('\u001b[32m    2 + 2\u001b[39m');
    expect(renderDiff(painter(false), 'a.txt', 'one\n', 'uno\n')).toBe('  a.txt +1 -1\n  1   - one\n    1 + uno');
    // Two changes far apart: each with three lines of context, a ⋮ between, the numbers aligned to
    // the widest.
    const long = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
    const changed = long.map((l, i) => (i === 1 || i === 17 ? `${l}!` : l));
    const shown = renderDiff(painter(false), 'b.txt', long.join('\n'), changed.join('\n')).split('\n');
    expect(shown).toContain('   2    - line 2');
    expect(shown).toContain('      2 + line 2!');
    expect(shown).toContain('   5  5   line 5');
    expect(shown).toContain('     ⋮');
    expect(shown).toContain('     18 + line 18!');
    expect(shown.join('\n')).not.toMatch(/^(---|\+\+\+|@@)/m);
  });

  it('answers a value in time, and late when it does not come (the status line does not wait on the wallet)', async () => {
    expect(await withinTime(Promise.resolve(5n), 1000)).toBe(5n);
    expect(await withinTime(new Promise(() => undefined), 10)).toBe('late');
  });

  it('says how long a task took: tenths of a second under a minute, minutes and seconds after', () => {
    expect([400, 2140, 59_900, 59_960, 65_000, 3_720_000].map(duration)).toEqual([
      '0.4s',
      '2.1s',
      '59.9s',
      '1m 00s',
      '1m 05s',
      '62m 00s',
    ]);
    expect(worked(2140, 553200n, 'USD')).toBe('worked 2.1s · this task 0.0005532 USD');
    expect(worked(300, null, 'USD')).toBe('worked 0.3s');
  });
});
