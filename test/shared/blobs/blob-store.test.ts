import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { BlobTooLarge, type BlobStore } from '../../../src/shared/blobs/blob-store.js';
import { DatabaseBlobStore } from '../../../src/shared/blobs/database-store.js';
import { FolderBlobStore } from '../../../src/shared/blobs/folder-store.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { skippedWithout } from '../../helpers/skips.js';

/** `count` chunks of `size` bytes, each filled with its index, made as they are read. */
async function* chunks(count: number, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < count; i++) yield Buffer.alloc(size, i % 251);
}

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

interface Case {
  name: string;
  open: () => Promise<{ blobs: BlobStore; leftovers: () => Promise<number>; close: () => Promise<void> }>;
}

const cases: Case[] = [
  {
    name: 'folder',
    open: async () => {
      const folder = await mkdtemp(path.join(os.tmpdir(), 'tollgate-blob-test-'));
      const blobs = new FolderBlobStore(folder);
      const leftovers = async () =>
        (await readdir(folder, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).length;
      return { blobs, leftovers, close: () => rm(folder, { recursive: true, force: true }) };
    },
  },
];
const hasPostgres = await postgresAvailable();
if (hasPostgres)
  cases.push({
    name: 'postgres chunks',
    open: async () => {
      const database = await createTestDatabase();
      const store: Store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
      // Small chunks: a blob of a few of them shows the seams without megabytes of test data.
      const blobs = new DatabaseBlobStore(store.db, 1000);
      const leftovers = async () => {
        const rows: unknown = await store.db.execute(
          sql`select (select count(*) from blobs) + (select count(*) from blob_chunks) as n`,
        );
        return Number((rows as Array<{ n: string }>)[0]!.n);
      };
      return {
        blobs,
        leftovers,
        close: async () => {
          await store.close();
          await database.drop();
        },
      };
    },
  });
skippedWithout(hasPostgres ? null : 'no PostgreSQL here: the chunked blob store is not tested');

describe.each(cases)('blob store: $name', ({ open }) => {
  let opened: Awaited<ReturnType<Case['open']>>;
  beforeAll(async () => {
    opened = await open();
  }, 60_000);
  afterAll(() => opened?.close());

  it('keeps what it is given, with its size and SHA-256, and gives it back as a stream', async () => {
    const expected = await readAll(chunks(7, 777));
    const stored = await opened.blobs.put(chunks(7, 777), 10_000);
    expect(stored).toMatchObject({ bytes: 7 * 777, sha256: createHash('sha256').update(expected).digest('hex') });
    expect(await readAll((await opened.blobs.get(stored.id))!)).toEqual(expected);
    await opened.blobs.delete(stored.id);
    expect(await opened.blobs.get(stored.id)).toBeNull();
    expect(await opened.leftovers()).toBe(0);
  });

  it('keeps an empty blob, and a blob of exactly its bound', async () => {
    const empty = await opened.blobs.put(chunks(0, 1), 10);
    expect(await readAll((await opened.blobs.get(empty.id))!)).toEqual(Buffer.alloc(0));
    const full = await opened.blobs.put(chunks(2, 1000), 2000);
    expect((await readAll((await opened.blobs.get(full.id))!)).length).toBe(2000);
    await opened.blobs.delete(empty.id);
    await opened.blobs.delete(full.id);
  });

  it('stops reading past its bound, and keeps nothing', async () => {
    let read = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const chunk of chunks(100, 500)) {
        read++;
        yield chunk;
      }
    }
    await expect(opened.blobs.put(counted(), 2_400)).rejects.toBeInstanceOf(BlobTooLarge);
    // The fifth chunk passes the bound: no chunk after it is asked for.
    expect(read).toBe(5);
    expect(await opened.leftovers()).toBe(0);
  });

  it('keeps nothing of a source that fails midway', async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield Buffer.alloc(1500, 1);
      throw new Error('the client went away');
    }
    await expect(opened.blobs.put(failing(), 10_000)).rejects.toThrow('the client went away');
    expect(await opened.leftovers()).toBe(0);
  });

  it('sweeps a put that never finished, and only that', async () => {
    const kept = await opened.blobs.put(chunks(2, 700), 10_000);
    let release = () => {};
    const stalled = new Promise<void>((resolve) => (release = resolve));
    async function* hanging(): AsyncGenerator<Uint8Array> {
      yield Buffer.alloc(1500, 1);
      await stalled;
      yield Buffer.alloc(10, 1);
    }
    const put = opened.blobs.put(hanging(), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Nothing is a day old: nothing is swept.
    expect(await opened.blobs.sweepUnfinished(new Date(Date.now() - 86_400_000))).toBe(0);
    expect(await opened.blobs.sweepUnfinished(new Date(Date.now() + 60_000))).toBe(1);
    release();
    await expect(put).rejects.toThrow();
    expect((await readAll((await opened.blobs.get(kept.id))!)).length).toBe(1400);
    await opened.blobs.delete(kept.id);
    expect(await opened.leftovers()).toBe(0);
  });

  it('answers null for an id it never made, a malformed one included', async () => {
    expect(await opened.blobs.get('blob_' + '0'.repeat(48))).toBeNull();
    expect(await opened.blobs.get('../../etc/passwd')).toBeNull();
    await opened.blobs.delete('../../etc/passwd');
  });
});

describe('folder blob store without a folder (memory://)', () => {
  it('keeps blobs in a temporary folder of its own, removed on close', async () => {
    const blobs = new FolderBlobStore(null);
    onTestFinished(() => blobs.close());
    const stored = await blobs.put(chunks(3, 10), 100);
    const temporary = (await readdir(os.tmpdir())).filter((name) => name.startsWith('tollgate-blobs-'));
    const holding: string[] = [];
    for (const name of temporary) {
      const inside = await readdir(path.join(os.tmpdir(), name), { recursive: true }).catch(() => []);
      if (inside.some((entry) => entry.endsWith(stored.id))) holding.push(path.join(os.tmpdir(), name));
    }
    expect(holding).toHaveLength(1);
    await blobs.close();
    await expect(readdir(holding[0]!)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe.skipIf(!hasPostgres)('blob store in PostgreSQL chunks of their full size', () => {
  it('reads blob after blob back on one connection, each chunk as bytes (binary COPY)', async () => {
    const database = await createTestDatabase();
    // One connection: a COPY that left it waiting would hang every statement after it.
    const store = await openStore({ databaseUrl: database.url, dataDir: 'memory://', poolSize: 1 });
    onTestFinished(async () => {
      await store.close();
      await database.drop();
    });
    const blobs = new DatabaseBlobStore(store.db);
    const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
    const expected = sha256(await readAll(chunks(5, 700_000)));
    const stored = await blobs.put(chunks(5, 700_000), 10_000_000);
    expect(stored.sha256).toBe(expected);
    // Compared by hash: a deep comparison of megabytes takes the test's time.
    for (let read = 0; read < 2; read++) expect(sha256(await readAll((await blobs.get(stored.id))!))).toBe(expected);
    const sizes: unknown = await store.db.execute(
      sql`select length(data) as n from blob_chunks where blob_id = ${stored.id} order by seq`,
    );
    expect((sizes as Array<{ n: number }>).map((row) => row.n)).toEqual([1048576, 1048576, 1048576, 354272]);
  }, 60_000);
});
