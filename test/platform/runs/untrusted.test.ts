import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunLogWriter } from '../../../src/platform/runs/log.js';
import { readHostFile, storable, storableValue } from '../../../src/platform/runs/untrusted.js';

/**
 * The host-side read of what a run left (the `none` sandbox), and the log's
 * bound and escaping, with a hostile run's folder: links at the last
 * component and above it, a FIFO, /dev/zero, a sparse file.
 */

let root: string;
const SECRET = 'TOLLGATE_ADMIN_TOKEN=the-secret';

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'tollgate-untrusted-'));
  await mkdir(path.join(root, 'outside'));
  await writeFile(path.join(root, 'outside', 'terraform.tfstate'), SECRET);
  await mkdir(path.join(root, 'work', 'module'), { recursive: true });
  await writeFile(path.join(root, 'work', 'module', 'plain'), '{"version":4}');
  await symlink(path.join(root, 'outside', 'terraform.tfstate'), path.join(root, 'work', 'module', 'linked'));
  await symlink('/dev/zero', path.join(root, 'work', 'module', 'zero'));
  execFileSync('mkfifo', [path.join(root, 'work', 'module', 'fifo')]);
  await writeFile(path.join(root, 'work', 'module', 'sparse'), '');
  await truncate(path.join(root, 'work', 'module', 'sparse'), 400 * 1024 * 1024);
  // A link above the file: the module folder of another "run" is the outside folder.
  await symlink(path.join(root, 'outside'), path.join(root, 'work', 'other'));
});

afterAll(() => rm(root, { recursive: true, force: true }));

describe('readHostFile: what a run left, on the host, never through a link', () => {
  const read = (relative: string) => readHostFile(root, relative, 1024 * 1024, 2000);

  it('reads a regular file', async () => {
    expect(await read('work/module/plain')).toEqual({ kind: 'bytes', bytes: Buffer.from('{"version":4}') });
  });

  it('refuses a link, a link to /dev/zero, a FIFO (at once), a link in a folder above', async () => {
    for (const name of ['work/module/linked', 'work/module/zero', 'work/module/fifo', 'work/other/terraform.tfstate']) {
      const started = Date.now();
      expect(await read(name), name).toEqual({ kind: 'not-regular' });
      // At once: sooner than the read's own 2 s deadline, so from the open or the stat, never from
      // a read that waited (a FIFO's open without O_NONBLOCK would wait for a writer for ever).
      expect(Date.now() - started, name).toBeLessThan(2000);
    }
  });

  it('refuses a 400 MB sparse file before reading a byte; absent is absent', async () => {
    expect(await read('work/module/sparse')).toEqual({ kind: 'too-large' });
    expect(await read('work/module/none')).toEqual({ kind: 'absent' });
  });
});

describe('text PostgreSQL cannot store is escaped', () => {
  it('a NUL as \\u0000, a lone surrogate as U+FFFD, in strings and keys', () => {
    expect(storable('a\u0000b\ud800c')).toBe('a\\u0000b\ufffdc');
    expect(storable('pair \ud83d\ude00 kept')).toBe('pair \ud83d\ude00 kept');
    expect(storableValue({ 'k\u0000': ['x\u0000', 1, null, { y: '\udc00' }] })).toEqual({
      'k\\u0000': ['x\\u0000', 1, null, { y: '\ufffd' }],
    });
  });
});

describe('the log is cut at its bound, saying so, and stays storable', () => {
  it('keeps at most the bound of the tool output, then the cut line and the gateway lines', async () => {
    const pieces: string[] = [];
    const log = new RunLogWriter(async (seq, text) => void (pieces[seq] = text), [], { maxBytes: 1024 * 1024 });
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 50 * 1024; i++) log.write(line);
    log.write('nul \u0000 here\n');
    log.note('[tollgate] Applied.\n');
    await log.close();
    const text = pieces.join('');
    expect(Buffer.byteLength(text)).toBeLessThan(1024 * 1024 + 1024);
    expect(text).toContain('TOLLGATE_RUN_LOG_MB (1 MiB)');
    expect(text.endsWith('[tollgate] Applied.\n')).toBe(true);
    expect(text).not.toContain('\u0000');
  });
});
