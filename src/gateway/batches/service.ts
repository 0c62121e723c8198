import type { Database } from '../../shared/db/client.js';
import type { BlobStore } from '../../shared/blobs/blob-store.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Logger } from '../../shared/http/log.js';
import type { Registry } from 'prom-client';
import type { BatchesSettings } from '../../config/stored-types.js';
import type { FileStore } from '../files/store.js';
import type { BilledDeps, BilledEndpoint } from '../requests/endpoint.js';
import { echoedId } from '../stored-responses/ids.js';
import { batchMetrics } from './batch-metrics.js';
import { lineEndpoints } from './line-run.js';
import { LineStore } from './line-store.js';
import { OrgBatches } from './org-batches.js';
import { BATCH_ENDPOINTS, batchObject, type BatchOwner, newBatchId } from './objects.js';
import { BatchRunner } from './runner.js';
import { BatchStore } from './store.js';

type Json = Record<string, unknown>;

/** OpenAI's bounds on a batch's metadata. */
const METADATA_MAX_KEYS = 16;
const METADATA_KEY_CHARS = 64;
const METADATA_VALUE_CHARS = 512;

/** Who asks: the key's owner, and the key a batch's lines run under. */
export interface BatchCaller extends BatchOwner {
  keyId: string;
  keyHash: string;
}

/**
 * OpenAI's Batch API (`/v1/batches`): a batch made from an uploaded batch file, read, listed and
 * cancelled by its owner only (another organization's or project's id is 404, as an unknown one),
 * and run by `runner` on every replica. `start` begins the runner; `stop` ends it.
 *
 * @example
 * const batch = await deps.batches.create(caller, { input_file_id, endpoint, completion_window: '24h' });
 */
export class Batches {
  readonly store: BatchStore;
  readonly lines: LineStore;
  readonly runner: BatchRunner;
  /** An organization's batches with their cost so far, for the portal. */
  readonly org: OrgBatches;

  constructor(
    db: Database,
    private readonly parts: { files: FileStore; blobs: BlobStore; log: Logger; settings: BatchesSettings },
    registry: Registry | null,
  ) {
    const { settings } = parts;
    this.store = new BatchStore(db, settings);
    this.lines = new LineStore(db, settings.leaseMs);
    this.org = new OrgBatches(db);
    this.runner = new BatchRunner({ store: this.store, lines: this.lines, ...parts });
    if (registry)
      this.runner.events = batchMetrics(registry, {
        waiting: () => this.lines.waiting(),
        running: () => this.runner.size,
      });
  }

  /** Runs lines on this replica; `responses` is the Responses API as its route serves it. */
  start(deps: BilledDeps, responses: BilledEndpoint): void {
    this.runner.start(deps, lineEndpoints(responses));
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  async create(caller: BatchCaller, body: Json): Promise<Json> {
    const endpoint = body.endpoint;
    if (typeof endpoint !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(endpoint))
      throw invalid('endpoint', `must be one of ${BATCH_ENDPOINTS.join(', ')}`);
    if (body.completion_window !== '24h') throw invalid('completion_window', 'must be "24h"');
    const metadata = metadataOf(body.metadata);
    const fileId = body.input_file_id;
    if (typeof fileId !== 'string' || fileId === '') throw invalid('input_file_id', 'must be the id of a batch file');
    const file = await this.parts.files.get(caller, fileId);
    if (!file) throw new GatewayError('not_found', `No file with id \`${echoedId(fileId)}\` was found.`);
    if (file.purpose !== 'batch') throw invalid('input_file_id', 'must name a file uploaded with purpose "batch"');
    const windowMs = this.parts.settings.windowSeconds * 1000;
    const row = await this.store.create({
      id: newBatchId(),
      owner: { orgId: caller.orgId, projectId: caller.projectId },
      keyId: caller.keyId,
      keyHash: caller.keyHash,
      endpoint,
      inputFileId: file.id,
      metadata,
      expiresAt: new Date(Date.now() + windowMs),
    });
    return batchObject(row);
  }

  async get(owner: BatchOwner, id: string): Promise<Json> {
    const row = await this.store.get(owner, id);
    if (!row) throw notFound(id);
    return batchObject(row, await this.lines.usage(row.id));
  }

  async list(owner: BatchOwner, page: { after?: string; limit: number }): Promise<Json> {
    const { rows, more } = await this.store.list(owner, page);
    const data = rows.map((row) => batchObject(row));
    return { object: 'list', data, first_id: rows[0]?.id ?? null, last_id: rows.at(-1)?.id ?? null, has_more: more };
  }

  /**
   * Cancels a validating or running batch: `cancelling` at once, `cancelled` once its running lines
   * stopped and its results are written. A batch already ended is answered as it is.
   */
  async cancel(owner: BatchOwner, id: string): Promise<Json> {
    const row = await this.store.cancel(owner, id);
    if (!row) throw notFound(id);
    return batchObject(row);
  }
}

function metadataOf(value: unknown): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('metadata', 'must be an object of strings');
  const entries = Object.entries(value as Json);
  if (entries.length > METADATA_MAX_KEYS) throw invalid('metadata', `holds at most ${METADATA_MAX_KEYS} keys`);
  for (const [key, item] of entries)
    if (key.length > METADATA_KEY_CHARS || typeof item !== 'string' || item.length > METADATA_VALUE_CHARS)
      throw invalid(
        'metadata',
        `keys are at most ${METADATA_KEY_CHARS} characters, values strings of at most ${METADATA_VALUE_CHARS}`,
      );
  return value as Record<string, string>;
}

/** The same answer whatever the reason: unknown, or another organization's or project's. */
function notFound(id: string): GatewayError {
  return new GatewayError('not_found', `No batch with id \`${echoedId(id)}\` was found.`);
}

function invalid(field: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${field} ${message}.`, { details: [{ field, message }] });
}
