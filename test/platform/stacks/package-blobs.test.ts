import { createHash } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyLegacyPackages, readPackage } from '../../../src/platform/stacks/package-blobs.js';
import { newId } from '../../../src/shared/db/ids.js';
import { stacks } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { zipOf } from '../../helpers/zip.js';
import { orgWithUsers } from '../../surfaces/api/harness.js';

const stores = await availableStores();
const log = createLogger('error');

const manifest = (name: string) =>
  JSON.stringify({ name, title: `The ${name} stack`, description: 'Packages in blobs', category: 'Monitoring' });

describe.each(stores)("stacks' packages in the blob store (%s)", (store) => {
  let gateway: TestGateway;
  let alice: { key: string; id: string };
  let carol: { key: string; id: string };

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    alice = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    carol = (await orgWithUsers(gateway, ['owner'])).users[0]!;
  });
  afterAll(() => gateway?.close());

  async function upload(key: string, zip: Buffer): Promise<{ status: number; body: any }> {
    const form = new FormData();
    form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'stack.zip');
    const response = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    return { status: response.status, body: await response.json() };
  }

  const call = (key: string, method: string, path: string) =>
    fetch(`${gateway.url}/api/v1/stacks${path}`, { method, headers: { authorization: `Bearer ${key}` } });

  async function rowOf(id: string) {
    const [row] = await gateway.services.db.select().from(stacks).where(eq(stacks.id, id));
    return row!;
  }

  /** Whether the blob store has `id` (its stream closed at once). */
  async function blobExists(id: string): Promise<boolean> {
    const stream = await gateway.services.blobs.get(id);
    stream?.destroy();
    return stream !== null;
  }

  /** A zip of `bytes` or more: an entry of random bytes, which does not compress. */
  async function zipOfSize(name: string, bytes: number): Promise<Buffer> {
    const noise = Buffer.alloc(bytes);
    for (let i = 0; i < bytes; i += 4) noise.writeUInt32LE((Math.random() * 2 ** 32) >>> 0, i);
    return zipOf({ 'manifest.json': manifest(name), 'main.tf': '# blob', 'data.bin': noise.toString('base64') });
  }

  it('stores an upload as a blob, not in its row: downloaded and read for a run byte for byte', async () => {
    const zip = await zipOfSize('in-a-blob', 1_500_000);
    const added = await upload(alice.key, zip);
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ size_bytes: zip.length, sha256: sha256(zip) });
    const row = await rowOf(added.body.id);
    expect(row.package).toBeNull();
    expect(row.packageBlobId).toMatch(/^blob_[0-9a-f]{48}$/);
    expect(row.packageBytes).toBe(zip.length);
    // What the run worker reads (`runs/worker.ts`), and what a download sends.
    expect((await readPackage(gateway.services.db, gateway.services.blobs, row))!.equals(zip)).toBe(true);
    const downloaded = await call(alice.key, 'GET', `/${added.body.id}/download`);
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers.get('content-length')).toBe(String(zip.length));
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(zip)).toBe(true);
  });

  it("another organization's stack, by id: 404 to see, download or delete, and its blob kept", async () => {
    const zip = await zipOf({ 'manifest.json': manifest('not-yours'), 'main.tf': '# mine' });
    const added = await upload(alice.key, zip);
    expect(added.status).toBe(201);
    // Answered as for a stack that never was: the same words, the id asked for echoed back only.
    const unknown = newId('stk');
    for (const [method, path] of [
      ['GET', '/:id'],
      ['GET', '/:id/download'],
      ['DELETE', '/:id'],
    ] as const) {
      const answer = await call(carol.key, method, path.replace(':id', added.body.id));
      expect(answer.status, `${method} ${path}`).toBe(404);
      const never = await call(carol.key, method, path.replace(':id', unknown));
      expect((await answer.text()).replaceAll(added.body.id, 'ID')).toBe(
        (await never.text()).replaceAll(unknown, 'ID'),
      );
    }
    expect((await call(carol.key, 'GET', '/not-yours/download')).status).toBe(404);
    const row = await rowOf(added.body.id);
    expect(await blobExists(row.packageBlobId!)).toBe(true);
  });

  it('deleting a stack deletes its blob', async () => {
    const added = await upload(alice.key, await zipOf({ 'manifest.json': manifest('short-lived'), 'main.tf': '#' }));
    const { packageBlobId } = await rowOf(added.body.id);
    expect(await blobExists(packageBlobId!)).toBe(true);
    expect((await call(alice.key, 'DELETE', `/${added.body.id}`)).status).toBe(204);
    expect(await blobExists(packageBlobId!)).toBe(false);
  });

  it("copies a row's own bytes (from before the blob store) into it once, clearing the row; served meanwhile", async () => {
    const zip = await zipOf({ 'manifest.json': manifest('legacy-row'), 'main.tf': '# from before' });
    const id = newId('stk');
    await gateway.services.db.insert(stacks).values({
      id,
      name: 'legacy-row',
      visibility: 'global',
      title: 'A legacy row',
      category: 'Monitoring',
      inputs: [],
      package: zip,
      packageBlobId: null,
      packageBytes: zip.length,
      packageSha256: sha256(zip),
    });
    // Not yet copied: read from the row.
    const before = await call(alice.key, 'GET', `/${id}/download`);
    expect(Buffer.from(await before.arrayBuffer()).equals(zip)).toBe(true);

    expect(await copyLegacyPackages(gateway.services.db, gateway.services.blobs, log)).toBe(1);
    const row = await rowOf(id);
    expect(row.package).toBeNull();
    expect(row.packageBlobId).toMatch(/^blob_/);
    expect((await readPackage(gateway.services.db, gateway.services.blobs, row))!.equals(zip)).toBe(true);
    const after = await call(alice.key, 'GET', `/${id}/download`);
    expect(Buffer.from(await after.arrayBuffer()).equals(zip)).toBe(true);
    // Again (a restart, another replica): nothing left to copy, the blob unchanged.
    expect(await copyLegacyPackages(gateway.services.db, gateway.services.blobs, log)).toBe(0);
    expect((await rowOf(id)).packageBlobId).toBe(row.packageBlobId);
    await gateway.services.db.delete(stacks).where(eq(stacks.id, id));
  });
});

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
