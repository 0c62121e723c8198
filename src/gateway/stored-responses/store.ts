/**
 * Stored Responses (`POST /v1/responses` with `store`, read back by `GET`, `DELETE`
 * and `input_items`, continued by `previous_response_id`). The gateway keeps them in
 * its own database, not the engine's memory, so any gateway replica, after any
 * restart, continues a conversation whatever engine replica served the last turn.
 *
 * Every read names the organization: another organization's id, like an unknown or
 * an expired one, is `null` (the routes answer 404, as for an unknown id). An id
 * the gateway cannot have made is `null` without a database call, and one with a
 * character no id has a 400 (`ids.ts`). Every method answers within the store's
 * timeout (STORE_TIMEOUT_MS): a database that fails or does not answer is a 503
 * `responses_unavailable`, never a hang.
 */

type Json = Record<string, unknown>;

export interface StoredResponse {
  /** `resp_…`, the id the client sees. */
  id: string;
  orgId: string;
  /** The key that created it (for the request data per key; not a scope of reads). */
  keyId: string;
  /** The model as the client named it. */
  model: string;
  createdAt: Date;
  previousResponseId: string | null;
  /**
   * This turn's input, as items (a string input becomes one user message item), each with its `id`.
   * Saved as `kept.ts` keeps them: only what a later turn sends to the engine or `input_items`
   * gives back.
   */
  input: Json[];
  /**
   * The response object as the client received it (`status`, `output`, `usage`, …); saved as
   * `kept.ts` keeps it.
   */
  response: Json;
}

/**
 * A turn of a conversation as `chain` reads it: its input items, and of its response `id` and
 * `output` only.
 */
export interface ConversationTurn {
  id: string;
  input: Json[];
  response: Json;
}

/**
 * Where a page of input items starts and ends, as OpenAI's list routes page: ids of items, and the
 * order.
 */
export interface InputItemsQuery {
  after?: string;
  before?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface InputItemsPage {
  data: Json[];
  firstId: string | null;
  lastId: string | null;
  hasMore: boolean;
}

export interface ResponseStore {
  /** Keeps a response; refuses (a 400 naming the setting) one past the stored-size bound. */
  save(stored: StoredResponse): Promise<void>;
  /**
   * The response object as stored, or null when it is unknown, expired, deleted or another
   * organization's.
   */
  get(orgId: string, id: string): Promise<Json | null>;
  /**
   * The conversation that ends with `id` (`previous_response_id`), oldest turn first, for
   * continuing it: each turn's input items and, of its response, `id` and `output` only. Null as
   * for `get`; a 404 `previous_response_not_found` for an id the gateway cannot have made. Refuses
   * (a 400 naming the setting) a chain past its bound. The turns may be shared with parallel
   * readers of the same chain: read them, never change them.
   */
  chain(orgId: string, id: string): Promise<ConversationTurn[] | null>;
  /**
   * The items `ids` name (a request's `item_reference`s): input and output items of the
   * organization's live stored responses, by id, read in one statement whatever their number. An id
   * found nowhere (unknown, expired, deleted, another organization's) is absent from the map, and
   * nothing tells those apart.
   */
  referencedItems(orgId: string, ids: string[]): Promise<Map<string, Json>>;
  /** Deletes it; false when `get` would have said null. */
  delete(orgId: string, id: string): Promise<boolean>;
  /**
   * The input items of a response, as OpenAI's `GET /v1/responses/{id}/input_items` pages them;
   * null as for `get`.
   */
  inputItems(orgId: string, id: string, page: InputItemsQuery): Promise<InputItemsPage | null>;
  /** Deletes what is past the retention; the number deleted. */
  purgeExpired(now: Date): Promise<number>;
}
