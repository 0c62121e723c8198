import type { BlobStore } from '../../shared/blobs/blob-store.js';
import type { FileObject, FileStore } from '../files/store.js';
import type { LineRow, LineStore } from './line-store.js';
import { type BatchRow, resultLineId } from './objects.js';

/** Lines read per statement as a result file is written. */
const LINES_PER_READ = 500;
/** A result file may be large: the blob store's bound on it is the database's, not an upload's. */
const MAX_RESULT_BYTES = Number.MAX_SAFE_INTEGER;

/**
 * Writes a batch's output file (its lines answered 200) and error file (every other line), each
 * streamed from the lines' rows, LINES_PER_READ at a time, into the blob store, and kept as a file
 * of purpose `batch_output` of the batch's owner. A file with no line is not written (its id
 * stays null, as OpenAI's).
 */
export async function writeResults(
  batch: BatchRow,
  deps: { lines: LineStore; blobs: BlobStore; files: FileStore },
): Promise<{ outputFileId: string | null; errorFileId: string | null }> {
  const output = await resultFile(batch, 'done', deps);
  const errors = await resultFile(batch, 'failed', deps);
  return { outputFileId: output?.id ?? null, errorFileId: errors?.id ?? null };
}

async function resultFile(
  batch: BatchRow,
  status: 'done' | 'failed',
  deps: { lines: LineStore; blobs: BlobStore; files: FileStore },
): Promise<FileObject | null> {
  const [first] = await deps.lines.page(batch.id, status, -1, 1);
  if (!first) return null;
  const blob = await deps.blobs.put(resultLines(batch, status, deps.lines), MAX_RESULT_BYTES);
  const owner = { orgId: batch.orgId, projectId: batch.projectId };
  const filename = `${batch.id}_${status === 'done' ? 'output' : 'error'}.jsonl`;
  return deps.files.record(owner, { filename, purpose: 'batch_output', blob, lines: null }, true);
}

async function* resultLines(batch: BatchRow, status: 'done' | 'failed', lines: LineStore): AsyncGenerator<Buffer> {
  let after = -1;
  for (;;) {
    const page = await lines.page(batch.id, status, after, LINES_PER_READ);
    if (page.length === 0) return;
    yield Buffer.from(page.map((row) => `${JSON.stringify(resultLine(batch.id, row))}\n`).join(''));
    after = page.at(-1)!.line;
  }
}

/** One result line, as OpenAI's batch output has it: `{id, custom_id, response, error}`. */
function resultLine(batchId: string, row: LineRow) {
  const response =
    row.statusCode === null
      ? null
      : { status_code: row.statusCode, request_id: row.requestId, body: JSON.parse(row.response ?? 'null') as unknown };
  return {
    id: resultLineId(batchId, row.line),
    custom_id: row.customId,
    response,
    error: row.error ? (JSON.parse(row.error) as unknown) : null,
  };
}
