import { constants } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { chargeRecord } from '../../helpers/charges.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

/** The open flags of this process's descriptor for `file`, as Linux reports them in /proc/self/fdinfo. */
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
  it('appends with O_DSYNC, so a charge is on the disk when its append resolves', async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-journal-'));
    folders.push(folder);
    const file = path.join(folder, 'charges.journal');
    const journal = await ChargeJournal.open(file);
    await journal.append(chargeRecord('req_1', { orgId: 'org_1', keyId: 'key_1' }, 5n));
    const flags = await openFlagsOf(file);
    expect(flags & constants.O_DSYNC).toBe(constants.O_DSYNC);
    expect(flags & constants.O_APPEND).toBe(constants.O_APPEND);
    expect(await readFile(file, 'utf8')).toContain('"id":"req_1"');
    await journal.close();
  });
});
