import { Readable } from 'node:stream';
import { and, eq, lt } from 'drizzle-orm';
import type { Sql } from 'postgres';
import { blobs } from '../db/blob-schema.js';
import type { Database } from '../db/client.js';
import { withinStoreTimeout } from '../db/timeout.js';
import { type BlobStore, isBlobId, measured, newBlobId, type StoredBlob } from './blob-store.js';
import { chunkRowCopy, copiedField, runCopy } from './copy-binary.js';

/**
 * A chunk's size: large enough that a 200 MB file is 200 rows, small enough to hold one in memory
 * per stream.
 */
export const CHUNK_BYTES = 1024 * 1024;

/** Longest one chunk's COPY may take, in or out: a dead network can hang it for minutes. */
const CHUNK_TIMEOUT_MS = 30_000;

/**
 * Blobs in PostgreSQL, as 1 MiB `bytea` rows keyed by (blob, seq), for a
 * gateway on PostgreSQL: every replica reads what any other wrote. A blob's
 * row is made first and marked complete last; its chunks are written one
 * statement each as the bytes arrive (no transaction held open for an
 * upload's length), and a put that fails deletes what it wrote. A put that
 * died with its process is swept by `sweepUnfinished`. Reads
 * fetch one chunk at a time as the reader asks. Each chunk goes in and comes out by a binary
 * COPY of its one row (`copy-binary.ts`), as bytes: no hex text of it on the heap. Not for
 * PGlite: its heap never shrinks (`folder-store.ts` there).
 *
 * @example
 * const blobs = new DatabaseBlobStore(store.db);
 * const { id } = await blobs.put(stream, 200 * 1024 * 1024);
 */
export class DatabaseBlobStore implements BlobStore {
  /** postgres.js under `db`: its COPY streams, which drizzle does not offer. */
  private readonly sql: Sql;

  constructor(
    private readonly db: Database,
    private readonly chunkBytes = CHUNK_BYTES,
  ) {
    const client = (db as unknown as { $client?: Sql }).$client;
    if (typeof client?.unsafe !== 'function') throw new Error('the blob store in chunks needs PostgreSQL');
    this.sql = client;
  }

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
          await this.writeChunk(id, seq++, whole.subarray(0, this.chunkBytes));
          const rest = whole.subarray(this.chunkBytes);
          pending = rest.length > 0 ? [rest] : [];
          pendingBytes = rest.length;
        }
      }
      if (pendingBytes > 0) await this.writeChunk(id, seq, Buffer.concat(pending, pendingBytes));
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
    const readChunk = (seq: number) => this.readChunk(id, seq);
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let seq = 0; ; seq++) {
        const chunk = await readChunk(seq);
        if (!chunk) return;
        yield chunk;
      }
    }
    return Readable.from(chunks(), { objectMode: false, highWaterMark: 1 });
  }

  /** One chunk's row, by a COPY of it alone: one statement, as an insert would be. */
  private async writeChunk(id: string, seq: number, data: Buffer): Promise<void> {
    const query = this.sql.unsafe('copy blob_chunks (blob_id, seq, data) from stdin with (format binary)');
    await withinStoreTimeout(
      runCopy(query, (into) => {
        for (const part of chunkRowCopy(id, seq, data)) into.write(part);
        into.end();
      }),
      CHUNK_TIMEOUT_MS,
    );
  }

  /**
   * Chunk `seq` of blob `id` (an id `isBlobId` let through: COPY takes no parameters); null past
   * the last.
   */
  private async readChunk(id: string, seq: number): Promise<Buffer | null> {
    const query = this.sql.unsafe(
      `copy (select data from blob_chunks where blob_id = '${id}' and seq = ${seq}) to stdout with (format binary)`,
    );
    const parts = await withinStoreTimeout(runCopy(query), CHUNK_TIMEOUT_MS);
    return copiedField(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
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
