import { type BlobStore, BlobTooLarge, type StoredBlob } from '../../shared/blobs/blob-store.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { MultipartReader } from '../../shared/http/multipart.js';
import { BatchLineCheck, type LineProblem } from './batch-lines.js';
import { FILE_PURPOSES, type FileObject, type FileOwner, type FilePurpose, type FileStore } from './store.js';

/**
 * What bounds an upload: `config.files` (TOLLGATE_FILES_*), and the longest and deepest request a
 * batch line may be (the routes' own bounds: TOLLGATE_MAX_BODY_BYTES, TOLLGATE_MAX_JSON_DEPTH).
 */
export interface UploadSettings {
  maxBytes: number;
  maxLines: number;
  maxLineBytes: number;
  maxDepth: number;
}

/**
 * The parts a form may have: `file`, `purpose`, and a few the gateway reads past
 * (`expires_after[…]`).
 */
const MAX_PARTS = 8;
/** A form field other than the file: a short text. */
const MAX_FIELD_BYTES = 1024;
/** The longest file name kept. */
const MAX_FILENAME_CHARS = 255;

/**
 * `POST /v1/files`: reads the form as it arrives and streams the file into
 * the blob store, checked on the way: its size (413 past TOLLGATE_FILES_MAX_BYTES,
 * nothing kept) and, for a batch file, each line (`BatchLineCheck`). The
 * purpose may come after the file (the SDKs send the fields in the caller's
 * order): the lines are checked anyway, and the check counts once the
 * purpose is known. A refused upload leaves no blob behind.
 *
 * @example
 * const file = await receiveUpload(form, owner, { files, blobs, settings: { maxBytes, maxLines, maxLineBytes, maxDepth } });
 */
export async function receiveUpload(
  form: MultipartReader,
  owner: FileOwner,
  deps: { files: FileStore; blobs: BlobStore; settings: UploadSettings },
): Promise<FileObject> {
  const { files, blobs, settings } = deps;
  await files.checkRoom(owner.orgId);
  let purpose: string | null = null;
  let stored: { blob: StoredBlob; filename: string; check: BatchLineCheck | null } | null = null;
  try {
    for (let part = await form.next(), count = 1; part; part = await form.next(), count++) {
      if (count > MAX_PARTS) throw invalid('body', `holds more than ${MAX_PARTS} fields`);
      if (part.name === 'purpose') purpose = await fieldOf(form, 'purpose');
      else if (part.name !== 'file') await fieldOf(form, part.name);
      else if (stored) throw invalid('file', 'is sent twice; send one file per upload');
      else {
        // Known before the file: a file of another purpose is not read line by line.
        const check =
          purpose === null || purpose === 'batch' ? new BatchLineCheck(settings.maxLineBytes, settings.maxDepth) : null;
        const blob = await blobs.put(
          checked(form.body(), check, purpose === 'batch' ? settings.maxLines : null),
          settings.maxBytes,
        );
        stored = { blob, filename: filenameOf(part.filename), check };
      }
    }
    if (purpose === null) throw invalid('purpose', 'is required: batch or user_data');
    if (!(FILE_PURPOSES as readonly string[]).includes(purpose))
      throw invalid('purpose', `must be one of ${FILE_PURPOSES.join(', ')}`);
    if (!stored) throw invalid('file', 'is required: send the file as a multipart/form-data part named file');
    let lines: number | null = null;
    if (purpose === 'batch') {
      const check = stored.check!;
      check.end();
      if (check.requests > settings.maxLines) throw tooManyLines(settings.maxLines);
      if (check.problemCount > 0) throw badLines(check.problems, check.problemCount);
      lines = check.requests;
    }
    const { blob, filename } = stored;
    stored = null;
    return await files.record(owner, { filename, purpose: purpose as FilePurpose, blob, lines });
  } catch (error) {
    if (stored) await blobs.delete(stored.blob.id).catch(() => undefined);
    if (error instanceof BlobTooLarge)
      throw new GatewayError(
        'request_too_large',
        `The file is larger than ${settings.maxBytes} bytes, the most one file may be (TOLLGATE_FILES_MAX_BYTES).`,
        { headers: { connection: 'close' }, details: [{ field: 'file', message: `over ${settings.maxBytes} bytes` }] },
      );
    throw error;
  }
}

/**
 * The file's bytes, each line checked on the way; past `maxLines` requests (a batch file), stopped
 * at once.
 */
async function* checked(
  body: AsyncIterable<Buffer>,
  check: BatchLineCheck | null,
  maxLines: number | null,
): AsyncGenerator<Buffer> {
  for await (const chunk of body) {
    check?.push(chunk);
    if (check && maxLines !== null && check.requests > maxLines) throw tooManyLines(maxLines);
    yield chunk;
  }
}

async function fieldOf(form: MultipartReader, name: string): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of form.body()) {
    bytes += chunk.length;
    if (bytes > MAX_FIELD_BYTES) throw invalid(name, `is longer than ${MAX_FIELD_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8').trim();
}

/**
 * The name the client gave, without a folder, control characters or excess; "file" when it gave
 * none.
 */
function filenameOf(given: string | null): string {
  const base = (given ?? '').split(/[\\/]/).pop()!;
  const name = [...base]
    .filter((char) => char >= ' ' && char !== '\u007f')
    .join('')
    .trim();
  return name === '' ? 'file' : name.slice(0, MAX_FILENAME_CHARS);
}

function badLines(problems: LineProblem[], count: number): GatewayError {
  const named = problems.slice(0, 5);
  const more = count - named.length;
  const lines = named.map((p) => `line ${p.line} ${p.message}`).join('; ');
  return new GatewayError(
    'invalid_request',
    `The batch file has ${count} invalid line${count === 1 ? '' : 's'}: ${lines}${more > 0 ? `; and ${more} more` : ''}.`,
    { details: problems.map((p) => ({ field: `line ${p.line}`, message: p.message })) },
  );
}

function tooManyLines(maxLines: number): GatewayError {
  return invalid('file', `holds more than ${maxLines} requests, the most a batch file may (TOLLGATE_FILES_MAX_LINES)`);
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}
