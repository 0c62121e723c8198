/**
 * Stored Responses (`POST /v1/responses` with `store`, read back by `GET`, `DELETE`
 * and `input_items`, continued by `previous_response_id`). The gateway keeps them in
 * its own database, not the engine's memory, so any gateway replica, after any
 * restart, continues a conversation whatever engine replica served the last turn.
 *
 * Every read names the organization: another organization's id, like an unknown or
 * an expired one, is `null` (the routes answer 404, as for an unknown id).
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
  /** This turn's input, as items (a string input becomes one user message item), each with its `id`. */
  input: Json[];
  /** The response object as the client received it (`status`, `output`, `usage`, …). */
  response: Json;
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
  /** The response, or null when it is unknown, expired, deleted or another organization's. */
  get(orgId: string, id: string): Promise<StoredResponse | null>;
  /**
   * The conversation that ends with `id`, oldest turn first, for continuing it; null as for `get`.
   * Refuses (a 400 naming the setting) a chain past its bound.
   */
  chain(orgId: string, id: string): Promise<StoredResponse[] | null>;
  /** Deletes it; false when `get` would have said null. */
  delete(orgId: string, id: string): Promise<boolean>;
  /** The input items of a response, as OpenAI's `GET /v1/responses/{id}/input_items` pages them; null as for `get`. */
  inputItems(
    orgId: string,
    id: string,
    page: { after?: string; limit: number; order: 'asc' | 'desc' },
  ): Promise<InputItemsPage | null>;
  /** Deletes what is past the retention; the number deleted. */
  purgeExpired(now: Date): Promise<number>;
}
