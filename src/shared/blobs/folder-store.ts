import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, rename, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type BlobStore, isBlobId, measured, newBlobId, type StoredBlob } from './blob-store.js';

/**
 * Blobs as files in a folder (`<data folder>/blobs` for the embedded default): each written as
 * `<id>.part` and renamed when whole, so a reader never sees half a blob. A `memory://` data folder
 * keeps them in a temporary folder of its own, removed on close (memory stays flat either way).
 *
 * @example
 * const blobs = new FolderBlobStore(path.join(config.dataDir, 'blobs'));
 * const { id } = await blobs.put(stream, 200 * 1024 * 1024);
 */
export class FolderBlobStore implements BlobStore {
  private made: Promise<string> | null = null;

  /** `folder`: where the blobs go; null: a temporary folder, removed on close. */
  constructor(private readonly folder: string | null) {}

  async put(source: AsyncIterable<Uint8Array>, maxBytes: number): Promise<StoredBlob> {
    const id = newBlobId();
    const file = await this.pathOf(id, true);
    const partial = `${file}.part`;
    const { chunks, result } = measured(source, maxBytes);
    try {
      await pipeline(Readable.from(chunks, { objectMode: false }), createWriteStream(partial, { flags: 'wx' }));
      await rename(partial, file);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    return { id, ...result() };
  }

  async get(id: string): Promise<Readable | null> {
    if (!isBlobId(id)) return null;
    const handle = await open(await this.pathOf(id, false)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    return handle ? handle.createReadStream({ highWaterMark: 64 * 1024 }) : null;
  }

  async delete(id: string): Promise<void> {
    if (!isBlobId(id)) return;
    await rm(await this.pathOf(id, false), { force: true });
  }

  async sweepUnfinished(before: Date): Promise<number> {
    // A fixed folder may hold what an earlier process left; a temporary one only this process's.
    const root = this.folder ?? (this.made ? await this.made : null);
    if (root === null) return 0;
    let swept = 0;
    const entries = await readdir(root, { recursive: true }).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    for (const entry of entries) {
      if (!entry.endsWith('.part')) continue;
      const file = path.join(root, entry);
      const written = await stat(file).catch(() => null);
      if (written && written.mtime < before) {
        await rm(file, { force: true });
        swept++;
      }
    }
    return swept;
  }

  async close(): Promise<void> {
    if (this.folder === null && this.made) await rm(await this.made, { recursive: true, force: true });
  }

  /** A blob's file: in a folder named for two of its id's digits, so no folder holds them all. */
  private async pathOf(id: string, forWriting: boolean): Promise<string> {
    this.made ??=
      this.folder === null
        ? mkdtemp(path.join(os.tmpdir(), 'tollgate-blobs-'))
        : mkdir(this.folder, { recursive: true }).then(() => this.folder!);
    const shard = path.join(await this.made, id.slice(5, 7));
    if (forWriting) await mkdir(shard, { recursive: true });
    return path.join(shard, id);
  }
}
