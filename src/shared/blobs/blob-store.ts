import { createHash, randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';

/** A blob as stored: its id, its size and the SHA-256 of its bytes (hex). */
export interface StoredBlob {
  id: string;
  bytes: number;
  sha256: string;
}

/**
 * Where the gateway keeps large bytes (uploaded files, stack packages) outside
 * its database's heap: a folder in the data folder for the embedded default
 * (`folder-store.ts`), PostgreSQL in chunks when the gateway runs on PostgreSQL
 * (`database-store.ts`), which every replica reaches. Bytes go in and come out
 * as streams: memory holds a chunk at a time, whatever the blob's size.
 */
export interface BlobStore {
  /**
   * Stores `source` as it arrives. Past `maxBytes` it stops reading and throws `BlobTooLarge`; a
   * source that throws is rethrown. Either way nothing is kept.
   */
  put(source: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob>;
  /** The blob's bytes, read as they are consumed; null when there is no such blob. */
  get(id: string): Promise<Readable | null>;
  /** Deletes it; an unknown id is no error. */
  delete(id: string): Promise<void>;
  /** Deletes what puts began before `before` and never finished (their process died); how many. */
  sweepUnfinished(before: Date): Promise<number>;
  /** Ends what the store holds open (a temporary folder is removed). */
  close(): Promise<void>;
}

/** A put past its byte bound: nothing was kept. */
export class BlobTooLarge extends Error {
  override name = 'BlobTooLarge';
  constructor(readonly maxBytes: number) {
    super(`more than ${maxBytes} bytes`);
  }
}

/** Every id a store makes: no other is looked up (a folder store builds a path from it). */
const BLOB_ID = /^blob_[0-9a-f]{48}$/;

export function newBlobId(): string {
  return `blob_${randomBytes(24).toString('hex')}`;
}

export function isBlobId(id: string): boolean {
  return BLOB_ID.test(id);
}

/**
 * `source` passed through, counted and hashed on the way: `BlobTooLarge` as soon as it passes
 * `maxBytes`, and, once read to its end, `result()` its size and SHA-256.
 */
export function measured(
  source: AsyncIterable<Uint8Array>,
  maxBytes: number,
): { chunks: AsyncGenerator<Buffer>; result: () => { bytes: number; sha256: string } } {
  const hash = createHash('sha256');
  let bytes = 0;
  let ended = false;
  async function* chunks(): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      bytes += chunk.byteLength;
      if (bytes > maxBytes) throw new BlobTooLarge(maxBytes);
      hash.update(chunk);
      yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
    ended = true;
  }
  return {
    chunks: chunks(),
    result: () => {
      if (!ended) throw new Error('the blob was not read to its end');
      return { bytes, sha256: hash.digest('hex') };
    },
  };
}

/**
 * A web stream of `source`, pulled one chunk at a time as the reader asks (no read ahead): a slow
 * client holds one chunk in memory, not the blob.
 */
export function webStreamOf(source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> {
  const iterator: AsyncIterator<Uint8Array, unknown> = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
}
