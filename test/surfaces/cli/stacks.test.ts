import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgWithUsers } from '../api/harness.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { zipOf } from '../../helpers/zip.js';
import { main } from '../../../src/surfaces/cli/main.js';
import { type Run, tollgate } from './harness.js';

const VARIABLES = `
variable "partition" {
  type        = string
  default     = "main"
  description = "The partition jobs go to"
}
variable "nodes_per_job" {
  type = number
}
variable "gpu_model" {
  type    = string
  default = null
}
variable "tollgate_cluster_id" {
  type = string
}
`;

describe('tollgate CLI: stacks list, get, add, download and delete with an API key', () => {
  let gateway: TestGateway;
  let server: Server;
  let packageUrl: string;
  let folder: string;
  let key: string;
  let otherKey: string;
  let zip: Buffer;

  beforeAll(async () => {
    // The gateway fetches packages by URL from this test's own server on 127.0.0.1 over http: both
    // allowances on.
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_STACK_URL_ALLOW_HTTP: 'true',
      TOLLGATE_STACK_URL_ALLOW_PRIVATE: 'true',
    });
    const people = await orgWithUsers(gateway, ['owner', 'member']);
    key = people.users[0]!.key;
    otherKey = people.users[1]!.key;
    folder = await mkdtemp(path.join(tmpdir(), 'tollgate-cli-stacks-'));
    zip = await zipOf({ 'batch/main.tf': VARIABLES, 'batch/README.md': '# Batch\n\nA batch queue for the cluster.' });
    await writeFile(path.join(folder, 'batch.zip'), zip);
    const fetched = await zipOf({
      'manifest.json': JSON.stringify({ title: 'Fetched', category: 'Orchestration', icon: '🧭' }),
      'main.tf': '',
    });
    server = createServer((request, response) =>
      request.url === '/fetched.zip' ? response.end(fetched) : response.writeHead(404).end(),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    packageUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/fetched.zip`;
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => server?.close(resolve));
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const as = (secret: string) => (args: string[]) =>
    tollgate(args, { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret }, undefined, folder);
  /**
   * `tollgate` as a program started in the test's folder: for commands that read or write a file
   * there.
   */
  const userInFolder = (args: string[]) => as(key)(args);
  /**
   * `tollgate` in this process (its `main`, with the gateway and key as flags): for every other
   * command. A Node start per command took most of these tests' time, past 30 s on a busy machine.
   */
  const user = async (args: string[]): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const code = await main([...args, '--url', gateway.url, '--api-key', key], {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
    });
    let json: unknown;
    try {
      json = JSON.parse(stdout);
    } catch {
      json = undefined;
    }
    return { code, stdout, stderr, json };
  };

  it('adds a .zip (private, named after its folder), lists it with the shipped ones, shows its inputs, and downloads the same bytes', async () => {
    const added = await userInFolder(['stacks', 'add', 'batch.zip']);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    expect(added.stdout).toBe('Added stack batch (private): Batch. Inputs: gpu_model, nodes_per_job, partition.\n');

    const list = await user(['stacks', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^NAME\s+CATEGORY\s+VISIBILITY\s+INPUTS\s+TITLE\n/);
    expect(list.stdout).toMatch(/\nbatch\s+Custom\s+private\s+3\s+Batch\n/);
    expect(list.stdout).toMatch(/\nmonitoring\s+Monitoring\s+global\s+/);
    const listed = await user(['stacks', 'list', '--json']);
    expect(listed.json.data.map((s: { name: string }) => s.name)).toContain('batch');
    expect(
      (await user(['stacks', 'list', '--category', 'Monitoring', '--json'])).json.data.map(
        (s: { category: string }) => s.category,
      ),
    ).toEqual(['Monitoring']);
    expect(
      (await user(['stacks', 'list', '--search', 'batch queue', '--json'])).json.data.map(
        (s: { name: string }) => s.name,
      ),
    ).toEqual(['batch']);
    // Another user of the same organization does not see a private stack.
    expect(
      (await as(otherKey)(['stacks', 'list', '--json'])).json.data.map((s: { name: string }) => s.name),
    ).not.toContain('batch');

    const shown = await user(['stacks', 'get', 'batch']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      /^name:\s+batch\ntitle:\s+Batch\ndescription:\s+A batch queue for the cluster\.\ncategory:\s+Custom\n/,
    );
    expect(shown.stdout).toMatch(/visibility:\s+private\n/);
    expect(shown.stdout).toMatch(/\nInputs:\nINPUT\s+TYPE\s+REQUIRED\s+DEFAULT\s+DESCRIPTION\n/);
    expect(shown.stdout).toMatch(/\ngpu_model\s+string\s+no\s+-\n/);
    expect(shown.stdout).toMatch(/\nnodes_per_job\s+number\s+yes\s+-\n/);
    expect(shown.stdout).toMatch(/\npartition\s+string\s+no\s+"main"\s+The partition jobs go to\n/);
    const json = (await user(['stacks', 'get', 'batch', '--json'])).json;
    expect(json).toMatchObject({
      name: 'batch',
      visibility: 'private',
      size_bytes: zip.length,
      inputs: expect.arrayContaining([{ name: 'nodes_per_job', type: 'number', required: true }]),
    });

    const saved = await userInFolder(['stacks', 'download', 'batch', '-o', 'copy.zip']);
    expect(saved).toMatchObject({
      code: 0,
      stdout: `Saved stack batch to copy.zip (${zip.length} bytes, sha256 ${json.sha256}).\n`,
    });
    expect((await readFile(path.join(folder, 'copy.zip'))).equals(zip)).toBe(true);
  });

  it("adds a package the gateway fetches from a URL, its manifest with only the spec's fields", async () => {
    const added = await user(['stacks', 'add', packageUrl, '--json']);
    expect(added.code).toBe(0);
    expect(added.json).toMatchObject({
      name: 'fetched',
      title: 'Fetched',
      category: 'Orchestration',
      icon: '🧭',
      visibility: 'private',
    });
    expect((await user(['stacks', 'get', 'fetched'])).stdout).toMatch(/\nInputs: none\n$/);
    // Without -o: NAME.zip where it runs.
    const saved = await userInFolder(['stacks', 'download', 'fetched', '--json']);
    expect(saved.json).toEqual({
      name: 'fetched',
      file: 'fetched.zip',
      size_bytes: added.json.size_bytes,
      sha256: added.json.sha256,
    });
    expect((await readFile(path.join(folder, 'fetched.zip'))).length).toBe(added.json.size_bytes);
  });

  it("deletes a private stack; a global one is not a user's to delete", async () => {
    await writeFile(path.join(folder, 'doomed.zip'), await zipOf({ 'main.tf': '' }));
    expect((await userInFolder(['stacks', 'add', 'doomed.zip'])).code).toBe(0);
    expect(await user(['stacks', 'delete', 'doomed'])).toMatchObject({ code: 0, stdout: 'Deleted stack doomed.\n' });
    const gone = await user(['stacks', 'get', 'doomed']);
    expect(gone).toMatchObject({ code: 1, stdout: '' });
    expect(gone.stderr).toBe('error: Stack doomed does not exist. (NOT_FOUND)\n');
    const global = await user(['stacks', 'delete', 'monitoring']);
    expect(global.code).toBe(1);
    expect(global.stderr).toContain('(FORBIDDEN)');
  });

  it('says clearly what is wrong: usage (2, nothing sent), a file it cannot read, a package the gateway refuses, a file it would overwrite (1)', async () => {
    const none = await user(['stacks', 'add']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /^error: give a FILE\.zip to send, or the https:\/\/ URL of one for the gateway to fetch\nusage: tollgate stacks add FILE\.zip \| URL/,
    );
    expect((await user(['stacks', 'add', 'a.zip', 'b.zip'])).stderr).toContain('unexpected argument "b.zip"');
    expect((await user(['stacks', 'get'])).code).toBe(2);
    expect((await user(['stacks', 'list', '--category', 'Games'])).stderr).toContain(
      '--category must be one of Scheduler, Orchestration, ML Framework, Monitoring, Custom',
    );
    expect((await tollgate(['stacks', 'list'], { TOLLGATE_URL: gateway.url }, undefined, folder)).stderr).toContain(
      'an API key is required',
    );

    const missing = await userInFolder(['stacks', 'add', 'nowhere.zip']);
    expect(missing).toMatchObject({ code: 1, stderr: 'error: cannot read nowhere.zip: no such file or folder\n' });
    await writeFile(path.join(folder, 'notes.zip'), await zipOf({ 'README.md': '# no module' }));
    const refused = await userInFolder(['stacks', 'add', 'notes.zip']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(VALIDATION_ERROR)\n  package: It holds no .tf file');
    const taken = await userInFolder(['stacks', 'add', 'batch.zip']);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain('(CONFLICT)');

    const before = await readFile(path.join(folder, 'batch.zip'));
    const overwrite = await userInFolder(['stacks', 'download', 'batch']);
    expect(overwrite).toMatchObject({
      code: 1,
      stderr: 'error: batch.zip exists already: remove it, or choose another file with -o FILE\n',
    });
    expect((await readFile(path.join(folder, 'batch.zip'))).equals(before)).toBe(true);
    expect((await user(['stacks', 'download', 'absent', '-o', 'absent.zip'])).stderr).toBe(
      'error: Stack absent does not exist. (NOT_FOUND)\n',
    );
  });
});
