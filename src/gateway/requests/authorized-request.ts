import type { TaskType } from '../../shared/db/schema.js';
import type { ModelRow, PriceRow } from '../catalog/service.js';
import type { AuthenticatedKey } from '../keys/service.js';
import type { Band } from '../flow/bands.js';

/**
 * The protocols the gateway bills, as usage records name them (`usage_records.endpoint`) and the
 * response cache keys them.
 */
export type EndpointName =
  'chat.completions' | 'embeddings' | 'completions' | 'messages' | 'responses' | 'responses.compact';

/** A request whose key, model, body, price and project are known good. */
export interface AuthorizedRequest {
  requestId: string;
  task: TaskType;
  /** The protocol it came by: its usage record and cache entry name it. */
  endpoint: EndpointName;
  caller: AuthenticatedKey;
  model: ModelRow;
  price: PriceRow;
  /** The model as the client named it (id, display name or repo id); responses echo it. */
  clientModel: string;
  projectId: string | null;
  /**
   * Its priority band in the fleet's flow control: the key's, or a lower one the request asked for
   * (`flow/bands.ts`).
   */
  band: Band;
  body: Record<string, unknown>;
  /**
   * The body as the client sent it: chat and completions send these bytes on where nothing in them
   * changes.
   */
  rawBody: Buffer;
  bodyBytes: number;
  startedAt: number;
  /**
   * The response cache's key for the body, once computed (`requests/cached-answer.ts`): the
   * lookup's, and the write's after.
   */
  cacheKey?: string;
  /**
   * A Responses turn's id when it is known before the call (a background response run again by
   * another replica).
   */
  responseId?: string;
  /** The batch this request is a line of (`batches/`): its usage record names it. */
  batchId?: string;
}
