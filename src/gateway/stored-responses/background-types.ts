import type { TokenBounds } from '../billing/token-bounds.js';
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
  /** How it was admitted, to bill it should its takeover be refused (absent in older rows). */
  admitted?: AdmittedCharge;
}

/**
 * What the first admission of a job took: its model, price, bounds, hold and budget counts, so
 * that a replica taking it over bills what it generated even when it cannot admit it again (the
 * model disabled, the key revoked, the wallet spent). Amounts in nano-units, as decimal strings.
 */
export interface AdmittedCharge {
  modelId: string;
  price: { inputPerToken: string; cachedInputPerToken: string | null; outputPerToken: string };
  bounds: TokenBounds;
  holdNanos: string;
  budgetTag: string;
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
