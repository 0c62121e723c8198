import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Args, parseCommandLine } from '../../../src/surfaces/cli/args.js';
import { UsageError } from '../../../src/surfaces/cli/errors.js';
import { main } from '../../../src/surfaces/cli/main.js';
import { resolveSettings } from '../../../src/surfaces/cli/settings.js';

const args = (argv: string[], options = {}) => {
  const { values, positionals } = parseCommandLine(argv, options);
  return new Args(values, positionals);
};

describe('CLI arguments', () => {
  it('takes a negative number after a string flag as its value', () => {
    expect(
      parseCommandLine(['--amount', '-1.00', '--note', 'x'], { amount: { type: 'string' }, note: { type: 'string' } })
        .values,
    ).toMatchObject({ amount: '-1.00', note: 'x' });
  });

  it('checks whole numbers against their bounds', () => {
    const a = args(['--rpm', '120', '--big', '1000001', '--frac', '1.5', '--neg', '-3'], {
      rpm: { type: 'string' },
      big: { type: 'string' },
      frac: { type: 'string' },
      neg: { type: 'string' },
    });
    expect(a.int('rpm', 1, 1_000_000)).toBe(120);
    expect(a.int('absent', 1, 10)).toBeUndefined();
    for (const flag of ['big', 'frac', 'neg']) expect(() => a.int(flag, 1, 1_000_000)).toThrow(UsageError);
  });

  it('reads "unlimited" as null and true/false as booleans', () => {
    const a = args(['--tpm', 'unlimited', '--monthly', '500', '--cache', 'false'], {
      tpm: { type: 'string' },
      monthly: { type: 'string' },
      cache: { type: 'string' },
    });
    expect(a.limit('tpm', 100)).toBeNull();
    expect(a.limit('monthly', 1000)).toBe(500);
    expect(a.bool('cache')).toBe(false);
    expect(() => args(['--cache', 'yes'], { cache: { type: 'string' } }).bool('cache')).toThrow(
      '--cache must be true or false',
    );
  });

  it('refuses ids that would change the URL path', () => {
    for (const id of ['..', 'a/../b', '']) expect(() => args([id]).id('key ID')).toThrow(UsageError);
    expect(args(['Qwen/Qwen2.5-7B']).id('model ID')).toBe('Qwen/Qwen2.5-7B');
  });
});

describe('CLI settings', () => {
  it('prefers flags, then the environment, then the token file, and defaults the URL', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-settings-'));
    try {
      await writeFile(path.join(dir, 'admin-token'), 'from-file\n');
      expect(await resolveSettings({}, { TOLLGATE_DATA_DIR: dir })).toEqual({
        url: 'http://127.0.0.1:8080',
        token: 'from-file',
      });
      expect(
        await resolveSettings(
          {},
          { TOLLGATE_DATA_DIR: dir, TOLLGATE_ADMIN_TOKEN: 'from-env', TOLLGATE_URL: 'http://gw:9000/' },
        ),
      ).toEqual({ url: 'http://gw:9000', token: 'from-env' });
      expect(
        await resolveSettings(
          { url: 'https://gw.example/base/', token: 'from-flag' },
          { TOLLGATE_ADMIN_TOKEN: 'from-env' },
        ),
      ).toEqual({ url: 'https://gw.example/base', token: 'from-flag' });
      await expect(resolveSettings({}, { TOLLGATE_DATA_DIR: path.join(dir, 'missing') })).rejects.toThrow(
        'no operator token',
      );
      await expect(resolveSettings({ url: 'ftp://x' }, { TOLLGATE_ADMIN_TOKEN: 't' })).rejects.toThrow(UsageError);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('CLI help', () => {
  it('prints one JSON object for help --json', async () => {
    let out = '';
    const code = await main(['help', '--json'], { stdout: (text) => (out += text), stderr: () => {} });
    expect(code).toBe(0);
    const body = JSON.parse(out) as { object: string; commands: { usage: string }[] };
    expect(body.object).toBe('help');
    expect(body.commands.map((c) => c.usage)).toContain('tollgate keys revoke ID');
  });

  it("prints one command's usage for --help, and exits 2 for a bare group", async () => {
    const out: string[] = [];
    const io = { stdout: (text: string) => out.push(text), stderr: (text: string) => out.push(text) };
    expect(await main(['keys', 'revoke', '--help'], io)).toBe(0);
    expect(out.join('')).toContain('usage: tollgate keys revoke ID');
    expect(await main(['keys'], io)).toBe(2);
  });
});
