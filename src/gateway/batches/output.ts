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
    yield Buffer.from(page.map((row) => `${JSON.stringify(resultLine(batch, row))}\n`).join(''));
    after = page.at(-1)!.line;
  }
}

/**
 * One result line, as OpenAI's batch output has it: `{id, custom_id, response, error}`. Every line
 * billed is shown with what it was billed, so each usage record of a batch is one line of its files
 * (`response.request_id` is the record's id): an answered line's `response.body` carries its usage,
 * and a line cut short after the engine read its prompt (its batch cancelled or expired) carries
 * it in a response of its own (`billedStop`).
 */
function resultLine(batch: BatchRow, row: LineRow) {
  const response =
    row.statusCode === null
      ? billedStop(batch, row)
      : { status_code: row.statusCode, request_id: row.requestId, body: JSON.parse(row.response ?? 'null') as unknown };
  return {
    id: resultLineId(batch.id, row.line),
    custom_id: row.customId,
    response,
    error: row.error ? (JSON.parse(row.error) as unknown) : null,
  };
}

/**
 * A line aborted in flight (its batch stopped) is billed its prompt under its request id with
 * status 499, as a client that leaves is (`line-run.ts`): its response says so, its body the error
 * and the usage billed. A line never sent was billed nothing and has no response.
 */
function billedStop(batch: BatchRow, row: LineRow) {
  if (row.promptTokens + row.completionTokens === 0) return null;
  const error = row.error ? (JSON.parse(row.error) as unknown) : null;
  return { status_code: 499, request_id: row.requestId, body: { error, usage: usageOf(batch.endpoint, row) } };
}

/** The tokens a line was billed, named as its endpoint names usage (the Responses API's own way). */
function usageOf(endpoint: string, row: LineRow) {
  const total = row.promptTokens + row.completionTokens;
  if (endpoint === '/v1/responses')
    return {
      input_tokens: row.promptTokens,
      input_tokens_details: { cached_tokens: row.cachedTokens },
      output_tokens: row.completionTokens,
      output_tokens_details: { reasoning_tokens: row.reasoningTokens },
      total_tokens: total,
    };
  return {
    prompt_tokens: row.promptTokens,
    completion_tokens: row.completionTokens,
    total_tokens: total,
    prompt_tokens_details: { cached_tokens: row.cachedTokens },
    completion_tokens_details: { reasoning_tokens: row.reasoningTokens },
  };
}
