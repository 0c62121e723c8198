import type { Readable } from 'node:stream';
import type { StoredBlob } from '../../shared/blobs/blob-store.js';

/**
 * Uploaded files, as OpenAI's `/v1/files` defines them: each one's row in the
 * database and its bytes in the blob store (`shared/blobs/`), never in the
 * database's heap. A file belongs to its organization and the key's project:
 * every read names them, and another organization's or project's id, like an
 * unknown or deleted one, is `null` (the routes answer 404).
 */

/** The purposes a file may be uploaded for: what the gateway uses (batch) and what it only keeps. */
export const FILE_PURPOSES = ['batch', 'user_data'] as const;
/** What a client may upload for, and `batch_output`: a batch's output and error files. */
export type FilePurpose = (typeof FILE_PURPOSES)[number] | 'batch_output';

/** A file as OpenAI's `OpenAIFile` has it. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: string;
  /** Deprecated in OpenAI's spec, still read by older clients: a stored file is always `processed`. */
  status: 'processed';
}

/** Whose a file is: the key's organization and project (null: a key of no project). */
export interface FileOwner {
  orgId: string;
  projectId: string | null;
}

/** A page of the list, as OpenAI's list reads `purpose`, `limit`, `order` and `after`. */
export interface FileListQuery {
  purpose?: string;
  limit: number;
  order: 'asc' | 'desc';
  after?: string;
}

export interface FileStore {
  /**
   * A 400 naming the setting when the organization is already at TOLLGATE_FILES_ORG_MAX or
   * _ORG_MAX_BYTES.
   */
  checkRoom(orgId: string): Promise<void>;
  /**
   * Keeps a stored blob as the owner's file; refused (a 400 naming the setting, the blob deleted)
   * past the bounds, unless `unbounded` (a batch's output: counted, never refused, as its input was
   * accepted).
   */
  record(
    owner: FileOwner,
    file: { filename: string; purpose: FilePurpose; blob: StoredBlob; lines: number | null },
    unbounded?: boolean,
  ): Promise<FileObject>;
  get(owner: FileOwner, id: string): Promise<FileObject | null>;
  /** The file's bytes, read as they are consumed. */
  content(owner: FileOwner, id: string): Promise<{ file: FileObject; bytes: Readable } | null>;
  list(owner: FileOwner, query: FileListQuery): Promise<{ data: FileObject[]; hasMore: boolean }>;
  /** Deletes its row and its bytes; false when `get` would have said null. */
  delete(owner: FileOwner, id: string): Promise<boolean>;
}
