import { Readable } from 'node:stream';
import { and, eq, isNotNull, isNull } from 'drizzle-orm';
import type { BlobStore, StoredBlob } from '../../shared/blobs/blob-store.js';
import type { Database } from '../../shared/db/client.js';
import { stacks } from '../../shared/db/schema.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import { DEFAULT_PACKAGE_LIMITS } from './zip-entries.js';

/** Where a stack's package is: its blob, or (a row not yet copied) the row's own bytes. */
export interface PackageRef {
  id: string;
  packageBlobId: string | null;
}

/**
 * A package's .zip into the blob store (already read and checked: at most the package bound).
 *
 * @example
 * const blob = await storePackage(blobs, zip);
 */
export function storePackage(blobs: BlobStore, zip: Buffer): Promise<StoredBlob> {
  return blobs.put(Readable.from([zip]), DEFAULT_PACKAGE_LIMITS.maxZipBytes);
}

/**
 * A stack's package as a stream: from its blob, read as it is consumed, or from its row when not
 * yet copied; null when neither holds it (the stack, or its blob, is gone).
 *
 * @example
 * const bytes = await openPackage(db, blobs, row);
 */
export async function openPackage(db: Database, blobs: BlobStore, ref: PackageRef): Promise<Readable | null> {
  if (ref.packageBlobId !== null) return blobs.get(ref.packageBlobId);
  const [row] = await db.select({ zip: stacks.package }).from(stacks).where(eq(stacks.id, ref.id));
  // Copied since the row was read: its blob then.
  if (row && row.zip === null) return openPackage(db, blobs, await refOf(db, ref.id));
  return row?.zip ? Readable.from([row.zip]) : null;
}

/**
 * A stack's package whole, for a run to unpack (the zip reader needs it all; at most the package
 * bound, 10 MiB); null when it is gone.
 */
export async function readPackage(db: Database, blobs: BlobStore, ref: PackageRef): Promise<Buffer | null> {
  const stream = await openPackage(db, blobs, ref);
  if (!stream) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function refOf(db: Database, id: string): Promise<PackageRef> {
  const [row] = await db.select({ packageBlobId: stacks.packageBlobId }).from(stacks).where(eq(stacks.id, id));
  return { id, packageBlobId: row?.packageBlobId ?? null };
}

/**
 * Copies the packages that rows still hold (from before the blob store) into it, one row at a
 * time, then clears the row's bytes; how many. Safe to stop and start again, and on several
 * replicas at once: a row is updated only if still uncopied, else the blob just written is deleted.
 * A process killed between the blob's write and the row's update leaves that one blob unreferenced.
 * A failure is logged, never thrown: the rows left are read as they are, and copied at next start.
 *
 * @example
 * await copyLegacyPackages(db, blobs, log);
 */
export async function copyLegacyPackages(db: Database, blobs: BlobStore, log: Logger): Promise<number> {
  let copied = 0;
  try {
    copied = await copyEach(db, blobs);
  } catch (error) {
    // What is left is read from its rows, and copied at the next start.
    log.error("stacks' packages not copied into the blob store", describeError(error));
  }
  if (copied > 0) log.info("stacks' packages copied into the blob store", { count: copied });
  return copied;
}

async function copyEach(db: Database, blobs: BlobStore): Promise<number> {
  let copied = 0;
  const uncopied = and(isNull(stacks.packageBlobId), isNotNull(stacks.package));
  for (;;) {
    const [row] = await db.select({ id: stacks.id, zip: stacks.package }).from(stacks).where(uncopied).limit(1);
    if (!row?.zip) break;
    const blob = await blobs.put(Readable.from([row.zip]), Number.MAX_SAFE_INTEGER);
    const updated = await db
      .update(stacks)
      .set({ packageBlobId: blob.id, package: null })
      .where(and(eq(stacks.id, row.id), uncopied))
      .returning({ id: stacks.id });
    if (updated.length === 0) await blobs.delete(blob.id);
    else copied++;
  }
  return copied;
}
