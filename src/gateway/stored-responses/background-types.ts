import type { backgroundResponses } from '../../shared/db/schema.js';

// The shapes of background responses' jobs (`background-store.ts` keeps them).

type Json = Record<string, unknown>;

export type BackgroundStatus = (typeof backgroundResponses.$inferSelect)['status'];
export type BackgroundRow = typeof backgroundResponses.$inferSelect;

/** What a replica needs to run a background job again: the request as it was authorized. */
export interface BackgroundRequest {
  body: Json;
  clientModel: string;
  projectId: string | null;
  band: string;
}

/** A job as it is queued (`POST /v1/responses` with `background: true`). */
export interface QueuedJob {
  id: string;
  orgId: string;
  keyId: string;
  keyHash: string;
  requestId: string;
  request: BackgroundRequest;
  response: Json;
  streamed: boolean;
}

/** What bounds the jobs: `config.responses` (TOLLGATE_RESPONSES_*). */
export interface BackgroundSettings {
  retentionDays: number;
  maxBackground: number;
  backgroundMaxEvents: number;
  backgroundLeaseMs: number;
}

/** The statuses a background response ends in: cancelling one of them changes nothing. */
export const FINISHED_STATUSES: ReadonlySet<string> = new Set(['completed', 'incomplete', 'failed', 'cancelled']);
