import { constants, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { chargeRecord } from '../../helpers/charges.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

/** A journal's path in a folder of its own, removed after the test. */
async function journalFile(): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-journal-'));
  folders.push(folder);
  return path.join(folder, 'charges.journal');
}

/**
 * The open flags of this process's descriptor for `file`, as Linux reports them in
 * /proc/self/fdinfo.
 */
async function openFlagsOf(file: string): Promise<number> {
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target !== file) continue;
    const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8');
    return Number.parseInt(/^flags:\s+(\d+)/m.exec(info)![1]!, 8);
  }
  throw new Error(`${file} is not open`);
}

describe.skipIf(process.platform !== 'linux')('the charge journal on disk', () => {
  it('writes with O_DSYNC, so a charge is on the disk when its append resolves', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    await journal.append(chargeRecord('req_1', { orgId: 'org_1', keyId: 'key_1' }, 5n));
    const flags = await openFlagsOf(file);
    expect(flags & constants.O_DSYNC).toBe(constants.O_DSYNC);
    // Lines are written at the journal's end by position, into room made ahead, never appended.
    expect(flags & constants.O_APPEND).toBe(0);
    expect(await readFile(file, 'utf8')).toContain('"id":"req_1"');
    await journal.close();
  });

  it('writes an append made alone before append returns: the charge is on the disk before its promise is awaited', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    const appended = journal.append(chargeRecord('req_alone', { orgId: 'org_1', keyId: 'key_1' }, 5n), { alone: true });
    expect(readFileSync(file, 'utf8')).toContain('"id":"req_alone"');
    // Resolved already: a write through the thread pool could not be done before the next turn of
    // the event loop.
    let resolved = false;
    void appended.then(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(true);
    await appended;
    await journal.close();
  });

  it('queues an append made alone behind a write under way: both charges kept, in order, when the journal is opened again', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    const owner = { orgId: 'org_1', keyId: 'key_1' };
    const first = journal.append(chargeRecord('req_first', owner, 5n));
    const second = journal.append(chargeRecord('req_second', owner, 7n), { alone: true });
    await Promise.all([first, second]);
    await journal.close();
    const text = await readFile(file, 'utf8');
    expect(text.indexOf('"id":"req_first"')).toBeGreaterThanOrEqual(0);
    expect(text.indexOf('"id":"req_second"')).toBeGreaterThan(text.indexOf('"id":"req_first"'));
    const reopened = await ChargeJournal.open(file);
    expect(reopened.pending().map((charge) => [charge.id, charge.cost])).toEqual([
      ['req_first', 5n],
      ['req_second', 7n],
    ]);
    await reopened.close();
  });

  it('writes lines into room made ahead, so that a write does not grow the file', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file, { roomBytes: 64 * 1024 });
    const owner = { orgId: 'org_1', keyId: 'key_1' };
    const size = (await stat(file)).size;
    expect(size).toBeGreaterThanOrEqual(64 * 1024);
    await journal.append(chargeRecord('req_alone', owner, 5n), { alone: true });
    await Promise.all([1, 2, 3].map((i) => journal.append(chargeRecord(`req_queued_${i}`, owner, 7n))));
    expect((await stat(file)).size).toBe(size);
    const text = await readFile(file, 'utf8');
    expect(text.startsWith('{"charge"')).toBe(true);
    expect(text.trimEnd().split('\n')).toHaveLength(4);
    await journal.close();
  });

  it('makes room again as lines fill it: every charge kept, in order, over many rooms', async () => {
    const file = await journalFile();
    // Room for about three lines at a time, so that the 120 charges cross it many times, alone and
    // in batches.
    const journal = await ChargeJournal.open(file, { roomBytes: 512 });
    const owner = { orgId: 'org_1', keyId: 'key_1' };
    const ids: string[] = [];
    for (let round = 0; round < 20; round++) {
      const alone = `req_${round}_alone`;
      const batch = [1, 2, 3, 4, 5].map((i) => `req_${round}_batch_${i}`);
      ids.push(alone, ...batch);
      await journal.append(chargeRecord(alone, owner, 1n), { alone: true });
      await Promise.all(batch.map((id) => journal.append(chargeRecord(id, owner, 2n))));
    }
    await journal.close();
    const text = await readFile(file, 'utf8');
    expect(text.trimEnd().split('\n').filter(Boolean)).toHaveLength(ids.length);
    const reopened = await ChargeJournal.open(file, { roomBytes: 512 });
    expect(reopened.pending().map((charge) => charge.id)).toEqual(ids);
    await reopened.close();
  });

  it('reads the lines around what a failed write left: a cut line, and a hole of zeros', async () => {
    const file = await journalFile();
    const owner = { orgId: 'org_1', keyId: 'key_1' };
    const first = await ChargeJournal.open(file);
    await first.append(chargeRecord('req_before', owner, 3n));
    await first.close();
    const before = (await readFile(file, 'utf8')).trimEnd();
    // A charge's line cut mid-write, a hole where a write past the file's end never landed, then
    // the next line on a line of its own, and room.
    const cut = before.slice(0, 30);
    const after = before.replace('req_before', 'req_after');
    await writeFile(file, `${before}\n${cut}${'\0'.repeat(64)}\n${after}\n${'\n'.repeat(4096)}`);
    const reopened = await ChargeJournal.open(file);
    expect(reopened.pending().map((charge) => [charge.id, charge.cost])).toEqual([
      ['req_before', 3n],
      ['req_after', 3n],
    ]);
    await reopened.close();
  });
});
