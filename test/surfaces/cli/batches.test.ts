import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/surfaces/cli/main.js';
import { progressBar, type BatchView } from '../../../src/surfaces/cli/commands/batches.js';
import { batchFile, chatLine } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import type { Run } from './harness.js';

/**
 * `tollgate batches` against a gateway on the simulator, as a user runs it: a JSONL file made a
 * batch, watched to its end with its progress on a terminal, listed, and its results saved; another
 * organization's key sees none of it.
 */
describe('tollgate CLI: batches', () => {
  let gateway: TestGateway;
  let folder: string;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_SIM_TTFT_MS: '5', TOLLGATE_SIM_ITL_MS: '1' });
    const tenant = { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 };
    key = (await gateway.tenant({ credit: '10.00', key: tenant })).secret;
    otherKey = (await gateway.tenant({ credit: '10.00', key: tenant })).secret;
    folder = await mkdtemp(path.join(tmpdir(), 'tollgate-cli-batches-'));
    await writeFile(path.join(folder, 'requests.jsonl'), batchFile(6, '/v1/chat/completions', chatLine));
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const as =
    (secret: string, terminal = false) =>
    async (args: string[]): Promise<Run> => {
      let stdout = '';
      let stderr = '';
      const code = await main([...args, '--url', gateway.url, '--api-key', secret], {
        stdout: (text) => (stdout += text),
        stderr: (text) => (stderr += text),
        stderrIsTerminal: terminal,
      });
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      return { code, stdout, stderr, json };
    };
  const user = as('');
  const file = (name: string) => path.join(folder, name);

  it('makes a batch of a file, watches it to its end, lists it and saves one result per custom_id', async () => {
    const created = await as(key)(['batches', 'create', file('requests.jsonl'), '--endpoint', '/v1/chat/completions']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const id = /^Started batch (batch_[0-9a-f]+) from file-[0-9a-f]+ \(validating\)\.$/m.exec(created.stdout)?.[1];
    expect(id, created.stdout).toBeDefined();
    expect(created.stdout).toContain(`Watch it: tollgate batches watch ${id}`);

    const watched = await as(key, true)(['batches', 'watch', id!]);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/^status:\s+completed$/m);
    expect(watched.stdout).toMatch(/^requests:\s+6 \(6 done, 0 failed\)$/m);
    // Progress lines are rewritten in place on the terminal; the last, with the final status,
    // stays, ended by a newline.
    expect(watched.stderr).toMatch(/^\r.* \[[#.]+\] \d\/\d done, 0 failed/);
    expect(watched.stderr.endsWith(`\rcompleted [${'#'.repeat(30)}] 6/6 done, 0 failed\u001b[K\n`)).toBe(true);

    const list = await as(key)(['batches', 'list']);
    expect(list.stdout).toMatch(/^ID\s+STATUS\s+ENDPOINT\s+DONE\s+FAILED\s+CREATED\n/);
    expect(list.stdout).toMatch(new RegExp(`\\n${id}\\s+completed\\s+/v1/chat/completions\\s+6/6\\s+0\\s+`));

    const saved = await as(key)(['batches', 'download', id!, '-o', file('results.jsonl')]);
    expect(saved).toMatchObject({ code: 0, stderr: '' });
    const results = (await readFile(file('results.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { custom_id: string; response: { status_code: number } });
    expect(results.map((r) => r.custom_id).sort()).toEqual(['req-1', 'req-2', 'req-3', 'req-4', 'req-5', 'req-6']);
    expect(results.every((r) => r.response.status_code === 200)).toBe(true);
    const noErrors = await as(key)(['batches', 'download', id!, '--errors', '-o', file('errors.jsonl')]);
    expect(noErrors).toMatchObject({ code: 1, stderr: `error: batch ${id} has no error file\n` });

    // Another organization's key: the same 404 as an unknown id, for every command.
    for (const command of [['show'], ['watch'], ['cancel'], ['download', '-o', file('theirs.jsonl')]]) {
      const theirs = await as(otherKey)(['batches', command[0]!, id!, ...command.slice(1)]);
      expect(theirs.code, command[0]).toBe(1);
      expect(theirs.stderr, command[0]).toMatch(/\(not_found\)|404|No batch/i);
    }
    expect((await as(otherKey)(['batches', 'list'])).stdout).not.toContain(id!);
  }, 90_000);

  it('refuses bad input before sending anything, and says why', async () => {
    const wrongEndpoint = await as(key)(['batches', 'create', file('requests.jsonl'), '--endpoint', '/v1/audio']);
    expect(wrongEndpoint.code).toBe(2);
    expect(wrongEndpoint.stderr).toMatch(/--endpoint must be one of \/v1\/chat\/completions/);
    const missing = await as(key)(['batches', 'create', file('absent.jsonl'), '--endpoint', '/v1/chat/completions']);
    expect(missing).toMatchObject({ code: 1 });
    expect(missing.stderr).toContain('absent.jsonl: no such file or folder');
    const badMetadata = await as(key)([
      'batches',
      'create',
      file('requests.jsonl'),
      '--endpoint',
      '/v1/chat/completions',
      '--metadata',
      'novalue',
    ]);
    expect(badMetadata.code).toBe(2);
    const noKey = await user(['batches', 'list']);
    expect(noKey.code).not.toBe(0);
  });

  it('draws how far a batch has got in one line that fits the room it has', () => {
    const batch = {
      id: `batch_${'0'.repeat(32)}`,
      status: 'in_progress',
      request_counts: { total: 10, completed: 6, failed: 1 },
    } as BatchView;
    expect(progressBar(batch, 200)).toBe(
      `${batch.id} in_progress [${'#'.repeat(21)}${'.'.repeat(9)}] 7/10 done, 1 failed`,
    );
    // Short of room: the id goes first, then the bar narrows, then "done"; never longer than room.
    expect(progressBar(batch, 79)).toBe(`in_progress [${'#'.repeat(21)}${'.'.repeat(9)}] 7/10 done, 1 failed`);
    expect(progressBar(batch, 39)).toBe('in_progress [#######...] 7/10, 1 failed');
    for (const room of [12, 20, 39, 50, 79, 120]) {
      expect(progressBar(batch, room).length).toBeLessThanOrEqual(room);
      expect(progressBar(batch, room)).toMatch(/^in_progress|^batch_/);
    }
  });
});
