import { createHash, randomBytes } from 'node:crypto';
import type { batches } from '../../shared/db/batches-schema.js';
import { BATCH_URLS } from '../files/batch-lines.js';

type Json = Record<string, unknown>;

export type BatchRow = typeof batches.$inferSelect;

/**
 * The endpoints a batch may name, every url a batch file's line may (`files/batch-lines.ts`): each
 * line runs as a request of that protocol (`line-run.ts`).
 */
export const BATCH_ENDPOINTS = BATCH_URLS;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

/**
 * The statuses of a batch that still holds one of its organization's places
 * (TOLLGATE_BATCHES_ORG_MAX).
 */
export const ACTIVE_STATUSES = ['validating', 'in_progress', 'finalizing', 'cancelling'] as const;

/** Whose a batch is: the key's organization and project (null: a key of no project). */
export interface BatchOwner {
  orgId: string;
  projectId: string | null;
}

/** The ids the gateway gives its batches: no other is looked up. */
const BATCH_ID = /^batch_[0-9a-f]{32}$/;

export function newBatchId(): string {
  return `batch_${randomBytes(16).toString('hex')}`;
}

export function isBatchId(id: string): boolean {
  return BATCH_ID.test(id);
}

/**
 * A line's request id: the same whichever replica runs it, so its usage record and its ledger entry
 * are written once (`wallet.ts`'s `chargeMany` keys them by it).
 */
export function lineRequestId(batchId: string, line: number): string {
  return `req_${batchId.slice('batch_'.length)}_${line}`;
}

/** A result line's own id, as OpenAI names them (`batch_req_…`). */
export function resultLineId(batchId: string, line: number): string {
  return `batch_req_${createHash('sha256').update(`${batchId}:${line}`).digest('hex').slice(0, 32)}`;
}

function seconds(date: Date | null): number | null {
  return date ? Math.floor(date.getTime() / 1000) : null;
}

/** A batch as OpenAI's `Batch` has it. */
export function batchObject(row: BatchRow, usage?: Json): Json {
  return {
    id: row.id,
    object: 'batch',
    endpoint: row.endpoint,
    errors: row.errors ? { object: 'list', data: JSON.parse(row.errors) as unknown } : null,
    input_file_id: row.inputFileId,
    completion_window: row.completionWindow,
    status: row.status,
    output_file_id: row.outputFileId,
    error_file_id: row.errorFileId,
    created_at: seconds(row.createdAt),
    in_progress_at: seconds(row.inProgressAt),
    expires_at: seconds(row.expiresAt),
    finalizing_at: seconds(row.finalizingAt),
    completed_at: seconds(row.completedAt),
    failed_at: seconds(row.failedAt),
    expired_at: seconds(row.expiredAt),
    cancelling_at: seconds(row.cancellingAt),
    cancelled_at: seconds(row.cancelledAt),
    request_counts: { total: row.total, completed: row.completed, failed: row.failed },
    ...(usage ? { usage } : {}),
    metadata: row.metadata ? (JSON.parse(row.metadata) as unknown) : null,
  };
}
