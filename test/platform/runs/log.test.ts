import { describe, expect, it } from 'vitest';
import { RunLogWriter } from '../../../src/platform/runs/log.js';

/** A writer whose stored pieces are kept in order. */
function writer(secrets: string[]) {
  const pieces: string[] = [];
  const log = new RunLogWriter(async (seq, text) => void (pieces[seq] = text), secrets);
  return { log, pieces, text: () => pieces.join('') };
}

describe('run log masking', () => {
  it('masks a sensitive value whatever its length: five characters, and one', async () => {
    const { log, text } = writer(['s3cr7', 'z']);
    log.write('the password is s3cr7\n');
    log.write('a lazy zoo\n');
    await log.close();
    expect(text()).toBe('the password is ********\na la********y ********oo\n');
  });

  it('masks in one pass: the longest secret first, and never a mask inside a mask', async () => {
    const { log, text } = writer(['*', 'abc', 'abcdef']);
    log.write('abcdef abc * done\n');
    await log.close();
    expect(text()).toBe('******** ******** ******** done\n');
  });

  it('masks a secret that crosses the 64 KiB cut of a long line, written in pipe-sized chunks', async () => {
    const secret = 'hunter2-very-secret-value';
    for (const offset of [1, 5, secret.length - 1]) {
      const { log, pieces, text } = writer([secret]);
      // One line with no end, the secret starting `offset` characters before the 64 KiB mark,
      // arriving 4 KiB at a time.
      const line = `${'a'.repeat(64 * 1024 - offset)}${secret}${'b'.repeat(70 * 1024)}`;
      for (let at = 0; at < line.length; at += 4096) log.write(line.slice(at, at + 4096));
      await log.close();
      expect(pieces.length).toBeGreaterThan(1);
      for (const piece of pieces) expect(piece).not.toMatch(/hunter|secret-value|very-sec|2-v/);
      expect(text()).toBe(line.replace(secret, '********'));
    }
  });

  it('keeps back the start of a secret whose rest is not written yet, when a long line is cut', async () => {
    const secret = 'opensesame-0123456789';
    const { log, pieces, text } = writer([secret]);
    log.write('a'.repeat(64 * 1024) + secret.slice(0, 8));
    log.write(`${secret.slice(8)} and more\n`);
    await log.close();
    for (const piece of pieces) expect(piece).not.toContain('opensesa');
    expect(text()).toBe(`${'a'.repeat(64 * 1024)}******** and more\n`);
  });
});
