import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { and, asc, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { BlobStore, StoredBlob } from '../../shared/blobs/blob-store.js';
import type { Database } from '../../shared/db/client.js';
import { files, fileTotals } from '../../shared/db/files-schema.js';
import { withinStoreOr503 } from '../../shared/db/timeout.js';
import { GatewayError } from '../../shared/http/errors.js';
import { keysetAfter, ownedBy } from '../keys/owned-rows.js';
import { rowsOf } from '../../shared/db/rows.js';
import type { FileListQuery, FileObject, FileOwner, FilePurpose, FileStore } from './store.js';

/** What bounds the store: `config.files` (TOLLGATE_FILES_*). */
export interface FileStoreSettings {
  orgMax: number;
  orgMaxBytes: number;
}

/** The ids the gateway gives its files: no other is looked up. */
const FILE_ID = /^file-[0-9a-f]{32}$/;

type FileRow = typeof files.$inferSelect;

/**
 * Files' rows in the gateway's database, their bytes in `blobs`. An
 * organization's count and bytes are kept in `file_totals`, moved in the same
 * transaction as a row is added or deleted, and checked there: two uploads at
 * once cannot both take the last place.
 *
 * @example
 * const store = new DatabaseFileStore(db, blobs, config.files);
 * const file = await store.get({ orgId, projectId: null }, 'file-…');
 */
export class DatabaseFileStore implements FileStore {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly settings: FileStoreSettings,
  ) {}

  async checkRoom(orgId: string): Promise<void> {
    const [totals] = await this.bounded(this.db.select().from(fileTotals).where(eq(fileTotals.orgId, orgId)));
    if (totals && totals.files >= this.settings.orgMax) throw this.tooMany();
    if (totals && totals.bytes >= this.settings.orgMaxBytes) throw this.tooLarge();
  }

  async record(
    owner: FileOwner,
    file: { filename: string; purpose: FilePurpose; blob: StoredBlob; lines: number | null },
    unbounded = false,
  ): Promise<FileObject> {
    const { orgMax, orgMaxBytes } = this.settings;
    const { blob } = file;
    const within = unbounded
      ? sql`true`
      : sql`${fileTotals}.files < ${orgMax} and ${fileTotals}.bytes + ${blob.bytes} <= ${orgMaxBytes}`;
    const id = `file-${randomBytes(16).toString('hex')}`;
    try {
      const row = await this.bounded(
        this.db.transaction(async (tx) => {
          const counted = await tx.execute(sql`
            insert into ${fileTotals} (org_id, files, bytes) values (${owner.orgId}, 1, ${blob.bytes})
            on conflict (org_id) do update
               set files = ${fileTotals}.files + 1, bytes = ${fileTotals}.bytes + ${blob.bytes}
             where ${within}
            returning files`);
          if (rowsOf(counted).length === 0) {
            const [totals] = await tx.select().from(fileTotals).where(eq(fileTotals.orgId, owner.orgId));
            throw totals && totals.files >= orgMax ? this.tooMany() : this.tooLarge();
          }
          const [inserted] = await tx
            .insert(files)
            .values({
              id,
              orgId: owner.orgId,
              projectId: owner.projectId,
              purpose: file.purpose,
              filename: file.filename,
              bytes: blob.bytes,
              lines: file.lines,
              blobId: blob.id,
              sha256: blob.sha256,
            })
            .returning();
          return inserted!;
        }),
      );
      return fileObject(row);
    } catch (error) {
      await this.blobs.delete(blob.id).catch(() => undefined);
      throw error;
    }
  }

  async get(owner: FileOwner, id: string): Promise<FileObject | null> {
    const row = await this.row(owner, id);
    return row ? fileObject(row) : null;
  }

  async content(owner: FileOwner, id: string): Promise<{ file: FileObject; bytes: Readable } | null> {
    const row = await this.row(owner, id);
    if (!row) return null;
    const bytes = await this.blobs.get(row.blobId);
    return bytes ? { file: fileObject(row), bytes } : null;
  }

  async list(owner: FileOwner, query: FileListQuery): Promise<{ data: FileObject[]; hasMore: boolean }> {
    const conditions: SQL[] = [ownedBy(files, owner)];
    if (query.purpose !== undefined) conditions.push(eq(files.purpose, query.purpose));
    if (query.after !== undefined) {
      const after = await this.row(owner, query.after);
      if (!after)
        throw new GatewayError('invalid_request', 'after names no file of yours.', {
          details: [{ field: 'after', message: 'no such file' }],
        });
      conditions.push(keysetAfter(files, after.id, query.order));
    }
    const direction = query.order === 'desc' ? desc : asc;
    const rows = await this.bounded(
      this.db
        .select()
        .from(files)
        .where(and(...conditions))
        .orderBy(direction(files.createdAt), direction(files.id))
        .limit(query.limit + 1),
    );
    return { data: rows.slice(0, query.limit).map(fileObject), hasMore: rows.length > query.limit };
  }

  async delete(owner: FileOwner, id: string): Promise<boolean> {
    if (!FILE_ID.test(id)) return false;
    const gone = await this.bounded(
      this.db.transaction(async (tx) => {
        const [row] = await tx
          .delete(files)
          .where(and(eq(files.id, id), ownedBy(files, owner)))
          .returning({ blobId: files.blobId, bytes: files.bytes });
        if (!row) return null;
        await tx
          .update(fileTotals)
          .set({ files: sql`${fileTotals.files} - 1`, bytes: sql`${fileTotals.bytes} - ${row.bytes}` })
          .where(eq(fileTotals.orgId, owner.orgId));
        return row;
      }),
    );
    if (!gone) return false;
    // After the row: a file is gone for its owner even if its bytes outlive it (a blob store that
    // failed).
    await this.blobs.delete(gone.blobId);
    return true;
  }

  private async row(owner: FileOwner, id: string): Promise<FileRow | null> {
    if (!FILE_ID.test(id)) return null;
    const [row] = await this.bounded(
      this.db
        .select()
        .from(files)
        .where(and(eq(files.id, id), ownedBy(files, owner))),
    );
    return row ?? null;
  }

  private bounded<T>(work: Promise<T>): Promise<T> {
    return withinStoreOr503(work, 'files_unavailable', 'The gateway cannot read or write files right now.');
  }

  private tooMany(): GatewayError {
    return refusal(
      `Your organization has ${this.settings.orgMax} files`,
      `TOLLGATE_FILES_ORG_MAX=${this.settings.orgMax}`,
    );
  }

  private tooLarge(): GatewayError {
    const max = this.settings.orgMaxBytes;
    return refusal(`Your organization's files would pass ${max} bytes`, `TOLLGATE_FILES_ORG_MAX_BYTES=${max}`);
  }
}

function fileObject(row: FileRow): FileObject {
  return {
    id: row.id,
    object: 'file',
    bytes: row.bytes,
    created_at: Math.floor(row.createdAt.getTime() / 1000),
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
  };
}

function refusal(what: string, setting: string): GatewayError {
  return new GatewayError('invalid_request', `${what}, the most the gateway keeps (${setting}).`, {
    details: [{ field: 'file', message: `more than ${setting.split('=')[0]} allows` }],
  });
}
