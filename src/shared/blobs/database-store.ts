import { Readable } from 'node:stream';
import { and, eq, lt } from 'drizzle-orm';
import { blobChunks, blobs } from '../db/blob-schema.js';
import type { Database } from '../db/client.js';
import { type BlobStore, isBlobId, measured, newBlobId, type StoredBlob } from './blob-store.js';

/**
 * A chunk's size: large enough that a 200 MB file is 200 rows, small enough to hold one in memory
 * per stream.
 */
export const CHUNK_BYTES = 1024 * 1024;

/**
 * Blobs in PostgreSQL, as 1 MiB `bytea` rows keyed by (blob, seq), for a
 * gateway on PostgreSQL: every replica reads what any other wrote. A blob's
 * row is made first and marked complete last; its chunks are written one
 * statement each as the bytes arrive (no transaction held open for an
 * upload's length), and a put that fails deletes what it wrote. A put that
 * died with its process is swept by `sweepUnfinished`. Reads
 * fetch one chunk at a time as the reader asks. Not for PGlite: its heap never
 * shrinks (`folder-store.ts` there).
 *
 * @example
 * const blobs = new DatabaseBlobStore(store.db);
 * const { id } = await blobs.put(stream, 200 * 1024 * 1024);
 */
export class DatabaseBlobStore implements BlobStore {
  constructor(
    private readonly db: Database,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {}

  async put(source: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob> {
    const id = newBlobId();
    await this.db.insert(blobs).values({ id });
    const { chunks, result } = measured(source, maxBytes);
    try {
      let seq = 0;
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      for await (const chunk of chunks) {
        pending.push(chunk);
        pendingBytes += chunk.byteLength;
        while (pendingBytes >= this.chunkBytes) {
          const whole = Buffer.concat(pending, pendingBytes);
          await this.db.insert(blobChunks).values({ blobId: id, seq: seq++, data: whole.subarray(0, this.chunkBytes) });
          const rest = whole.subarray(this.chunkBytes);
          pending = rest.length > 0 ? [rest] : [];
          pendingBytes = rest.length;
        }
      }
      if (pendingBytes > 0)
        await this.db.insert(blobChunks).values({ blobId: id, seq, data: Buffer.concat(pending, pendingBytes) });
      const { bytes, sha256 } = result();
      await this.db.update(blobs).set({ bytes, sha256, complete: true }).where(eq(blobs.id, id));
      return { id, bytes, sha256 };
    } catch (error) {
      await this.delete(id).catch(() => undefined);
      throw error;
    }
  }

  async get(id: string): Promise<Readable | null> {
    if (!isBlobId(id)) return null;
    const [row] = await this.db.select({ complete: blobs.complete }).from(blobs).where(eq(blobs.id, id));
    if (!row?.complete) return null;
    const db = this.db;
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let seq = 0; ; seq++) {
        const [chunk] = await db
          .select({ data: blobChunks.data })
          .from(blobChunks)
          .where(and(eq(blobChunks.blobId, id), eq(blobChunks.seq, seq)));
        if (!chunk) return;
        yield chunk.data;
      }
    }
    return Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
  }

  async delete(id: string): Promise<void> {
    if (!isBlobId(id)) return;
    // Its chunks go with it (the foreign key cascades).
    await this.db.delete(blobs).where(eq(blobs.id, id));
  }

  /** Deletes blobs begun before `before` and never completed (a put whose process died); how many. */
  async sweepUnfinished(before: Date): Promise<number> {
    const gone = await this.db
      .delete(blobs)
      .where(and(eq(blobs.complete, false), lt(blobs.createdAt, before)))
      .returning({ id: blobs.id });
    return gone.length;
  }

  async close(): Promise<void> {}
}
