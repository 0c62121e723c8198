import { openAsBlob } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Args } from '../args.js';
import { segment } from '../client.js';
import { CliError, UsageError } from '../errors.js';
import { date, fields, table } from '../output.js';
import { BOOLEAN, type Command, type List, STRING } from './command.js';

// `tollgate batches`: OpenAI's Batch API on the gateway (docs/api.md, "Batches"), with an API key.
// A batch is made from a JSONL file (uploaded first, purpose `batch`), watched to its end with a
// progress bar on stderr, and its results saved as they are stored: one JSON line per request,
// keyed by `custom_id`.
//
// @example
// tollgate batches create requests.jsonl --endpoint /v1/chat/completions
// tollgate batches watch batch_… && tollgate batches download batch_… -o results.jsonl

/** The batch object of OpenAI's Batch API, as `/v1/batches` answers it (times in Unix seconds). */
export interface BatchView {
  id: string;
  object: 'batch';
  endpoint: string;
  input_file_id: string;
  completion_window: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  expires_at: number | null;
  completed_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  errors: { data: { line?: number | null; message: string }[] } | null;
  metadata: Record<string, string> | null;
}

/** The statuses a batch never leaves. */
const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);
/** How often `watch` asks: a batch runs for minutes to hours. */
const WATCH_EVERY_MS = 2_000;
const ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'];

const when = (seconds: number | null) => date(seconds === null ? null : new Date(seconds * 1000).toISOString());
const done = (b: BatchView) => b.request_counts.completed + b.request_counts.failed;

/**
 * `batch_… in_progress [#######.....] 70/100 done, 3 failed`: how far a batch has got, in one line
 * of at most `room` characters. When room is short the id goes first (the command line above names
 * it), then the bar narrows, then "done"; the status and the counts stay.
 */
export function progressBar(b: BatchView, room = 79): string {
  const { total, failed } = b.request_counts;
  const layouts = [
    { head: `${b.id} ${b.status}`, counts: `${done(b)}/${total} done, ${failed} failed`, least: 10 },
    { head: b.status, counts: `${done(b)}/${total} done, ${failed} failed`, least: 10 },
    { head: b.status, counts: `${done(b)}/${total}, ${failed} failed`, least: 5 },
  ];
  for (const { head, counts, least } of layouts) {
    // The bar's room: the line's less its head, its counts, two spaces and the brackets.
    const width = Math.min(30, room - head.length - counts.length - 4);
    if (width < least) continue;
    const filled = total > 0 ? Math.floor((done(b) / total) * width) : 0;
    return `${head} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${counts}`;
  }
  return `${b.status} ${done(b)}/${total}, ${failed} failed`.slice(0, room);
}

function describe(b: BatchView): string {
  const problems = (b.errors?.data ?? []).map((e) => `\n  ${e.line ? `line ${e.line}: ` : ''}${e.message}`);
  return (
    fields([
      ['id', b.id],
      ['status', b.status],
      ['endpoint', b.endpoint],
      ['input file', b.input_file_id],
      ['requests', `${b.request_counts.total} (${b.request_counts.completed} done, ${b.request_counts.failed} failed)`],
      ['created', when(b.created_at)],
      ['expires', when(b.expires_at)],
      ['completed', when(b.completed_at)],
      ['output file', b.output_file_id],
      ['error file', b.error_file_id],
    ]) + (problems.length > 0 ? `\nerrors:${problems.join('')}` : '')
  );
}

const createBatch: Command<BatchView> = {
  name: 'batches create',
  args: 'FILE.jsonl --endpoint PATH [--metadata KEY=VALUE,…] [--api-key KEY]',
  summary:
    "Upload a JSONL file of requests (custom_id, method, url, body on each line) and start a batch of them, run on the fleet's idle capacity within 24 h at the model's batch price.",
  api: 'public',
  positionals: 1,
  options: { endpoint: STRING, metadata: STRING, 'api-key': STRING },
  async request(a) {
    const file = a.positional();
    if (!file) throw new UsageError('give the JSONL file of requests');
    const endpoint = a.required('endpoint');
    if (!ENDPOINTS.includes(endpoint)) throw new UsageError(`--endpoint must be one of ${ENDPOINTS.join(', ')}`);
    metadataOf(a);
    const form = new FormData();
    form.set('purpose', 'batch');
    // A Blob backed by the file: fetch streams it, so a 200 MB file is never held here.
    form.set('file', await fileBlob(file), path.basename(file));
    return { method: 'POST', path: '/files', form };
  },
  async receive(uploaded, a, api) {
    const metadata = metadataOf(a);
    const body = {
      input_file_id: (uploaded as { id: string }).id,
      endpoint: a.required('endpoint'),
      completion_window: '24h',
      ...(metadata ? { metadata } : {}),
    };
    return (await api.send({ method: 'POST', path: '/batches', body })) as BatchView;
  },
  render: (b) =>
    `Started batch ${b.id} from ${b.input_file_id} (${b.status}).\nWatch it: tollgate batches watch ${b.id}`,
};

const listBatches: Command<List<BatchView>> = {
  name: 'batches list',
  args: '[--limit N] [--api-key KEY]',
  summary: "List your project's batches, newest first.",
  api: 'public',
  options: { limit: STRING, 'api-key': STRING },
  request: (a) => {
    const limit = a.int('limit', 1, 100) ?? 20;
    return { method: 'GET', path: `/batches?limit=${limit}` };
  },
  render: (list) =>
    table([
      ['ID', 'STATUS', 'ENDPOINT', 'DONE', 'FAILED', 'CREATED'],
      ...list.data.map((b) => [
        b.id,
        b.status,
        b.endpoint,
        `${done(b)}/${b.request_counts.total}`,
        String(b.request_counts.failed),
        when(b.created_at),
      ]),
    ]),
};

const showBatch: Command<BatchView> = {
  name: 'batches show',
  args: 'ID [--api-key KEY]',
  summary: 'Show a batch: its status, counts, times and files.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/batches/${segment(a.id('batch id'))}` }),
  render: describe,
};

const watchBatch: Command<BatchView> = {
  name: 'batches watch',
  args: 'ID [--api-key KEY]',
  summary: 'Follow a batch to its end with a progress bar (on a terminal), then show it. Exits 1 unless it completed.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/batches/${segment(a.id('batch id'))}` }),
  async receive(first, a, api) {
    let batch = first as BatchView;
    while (!ENDED.has(batch.status)) {
      api.progress(batch);
      await sleep(WATCH_EVERY_MS);
      batch = (await api.send({ method: 'GET', path: `/batches/${segment(a.id('batch id'))}` })) as BatchView;
    }
    // The bar's last state stays, with the status the batch ended in, and the details follow.
    api.progress(batch);
    return batch;
  },
  progress: (event, room) => progressBar(event as BatchView, room),
  progressStays: true,
  failure: (b) => (b.status === 'completed' ? null : `batch ${b.id} ended ${b.status}`),
  render: describe,
};

const cancelBatch: Command<BatchView> = {
  name: 'batches cancel',
  args: 'ID [--api-key KEY]',
  summary: 'Cancel a batch: the requests running are stopped and billed for what they generated; done ones are kept.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'POST', path: `/batches/${segment(a.id('batch id'))}/cancel` }),
  render: (b) => `Batch ${b.id} is ${b.status}.`,
};

interface Saved {
  batch: string;
  file: string;
  size_bytes: number;
}

const downloadBatch: Command<Saved> = {
  name: 'batches download',
  args: 'ID [-o FILE] [--errors] [--api-key KEY]',
  summary:
    "Save a batch's results (one JSON line per request, by custom_id) to FILE, or to ID.jsonl here; --errors saves its error file instead (ID.errors.jsonl). Never over an existing file unless -o names it.",
  api: 'public',
  positionals: 1,
  options: { output: { type: 'string', short: 'o' }, errors: BOOLEAN, 'api-key': STRING },
  async request(a) {
    const target = downloadTarget(a);
    if (!a.has('output') && (await exists(target)))
      throw new CliError(`${target} exists already: remove it, or choose another file with -o FILE`);
    return { method: 'GET', path: `/batches/${segment(a.id('batch id'))}` };
  },
  async receive(body, a, api) {
    const batch = body as BatchView;
    const fileId = a.flag('errors') ? batch.error_file_id : batch.output_file_id;
    if (!fileId)
      throw new CliError(
        `batch ${batch.id} has no ${a.flag('errors') ? 'error' : 'output'} file${ENDED.has(batch.status) ? '' : ` yet (${batch.status})`}`,
      );
    const bytes = (await api.send({
      method: 'GET',
      path: `/files/${segment(fileId)}/content`,
      binary: true,
    })) as Buffer;
    const file = downloadTarget(a);
    try {
      await writeFile(file, bytes, { flag: a.has('output') ? 'w' : 'wx' });
    } catch (error) {
      throw new CliError(`cannot write ${file}: ${(error as Error).message}`);
    }
    return { batch: batch.id, file, size_bytes: bytes.length };
  },
  render: (s) => `Saved batch ${s.batch}'s results to ${s.file} (${s.size_bytes} bytes).`,
};

function downloadTarget(a: Args): string {
  return a.optional('output') ?? `${a.id('batch id')}${a.flag('errors') ? '.errors' : ''}.jsonl`;
}

/** `--metadata k=v,k2=v2` as the batch's metadata, or undefined when it is not given. */
function metadataOf(a: Args): Record<string, string> | undefined {
  const given = a.optional('metadata');
  if (given === undefined) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of given.split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--metadata takes KEY=VALUE, not "${pair}"`);
    metadata[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return metadata;
}

async function fileBlob(file: string): Promise<Blob> {
  try {
    if (!(await stat(file)).isFile()) throw new CliError(`cannot read ${file}: it is not a file`);
    return await openAsBlob(file, { type: 'application/jsonl' });
  } catch (error) {
    if (error instanceof CliError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new CliError(
      `cannot read ${file}: ${code === 'ENOENT' ? 'no such file or folder' : (error as Error).message}`,
    );
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

export const batchCommands: Command[] = [
  createBatch,
  listBatches,
  showBatch,
  watchBatch,
  cancelBatch,
  downloadBatch,
] as Command[];
