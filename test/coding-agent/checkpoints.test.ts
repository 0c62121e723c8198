import { mkdir, mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../src/coding-agent/checkpoints.js';

// /undo's checkpoints: one per turn that changed files, each file as it was before the turn's first
// change.
describe('checkpoints for /undo', () => {
  let tmp: string;
  let root: string;
  const at = (name: string) => path.join(root, name);
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-undo-'));
    root = path.join(tmp, 'project');
    await mkdir(root);
  });
  afterAll(() => rm(tmp, { recursive: true, force: true }));

  it('undoes turn by turn, each file as it was before the turn’s first change, and nothing after the last', async () => {
    const checkpoints = new Checkpoints(1000);
    await writeFile(at('a.txt'), 'one\n');
    checkpoints.begin();
    await checkpoints.keep([at('a.txt')]);
    await writeFile(at('a.txt'), 'two\n');
    await checkpoints.keep([at('a.txt')]); // a second change in the same turn keeps nothing new
    await writeFile(at('a.txt'), 'three\n');
    checkpoints.begin(); // a turn that changes nothing makes no checkpoint
    checkpoints.begin();
    await checkpoints.keep([at('a.txt'), at('b.txt')]);
    await writeFile(at('a.txt'), 'four\n');
    await writeFile(at('b.txt'), 'new\n');

    expect(await checkpoints.undo(root)).toEqual(['restored a.txt', 'removed b.txt (the turn created it)']);
    expect(await readFile(at('a.txt'), 'utf8')).toBe('three\n');
    expect(await checkpoints.undo(root)).toEqual(['restored a.txt']);
    expect(await readFile(at('a.txt'), 'utf8')).toBe('one\n');
    expect(await checkpoints.undo(root)).toBeNull();
  });

  it('keeps no file larger than file_bytes, and writes nothing through a path that has become a link out', async () => {
    const checkpoints = new Checkpoints(10);
    const outside = path.join(tmp, 'outside.txt');
    await writeFile(outside, 'not the project’s\n');
    await writeFile(at('big.txt'), 'more than ten bytes\n');
    await writeFile(at('c.txt'), 'kept\n');
    checkpoints.begin();
    await checkpoints.keep([at('big.txt'), at('c.txt')]);
    await unlink(at('c.txt'));
    await symlink(outside, at('c.txt'));

    expect(await checkpoints.undo(root)).toEqual([
      'not restored: big.txt (20 bytes, more than file_bytes, was not kept)',
      'not restored: c.txt now leads outside the project',
    ]);
    expect(await readFile(outside, 'utf8')).toBe('not the project’s\n');
  });
});
