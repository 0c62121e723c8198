/**
 * The settings of what the gateway keeps for its clients, as `Config` holds them: stored Responses,
 * conversations and files (`stored-settings.ts` reads them from the environment).
 */

/**
 * Stored Responses (`gateway/stored-responses/store.ts`): how long they are kept, and how large
 * they and a conversation may grow.
 */
export interface ResponsesSettings {
  /**
   * A stored response is gone this many days after it was made
   * (TOLLGATE_RESPONSES_RETENTION_DAYS).
   */
  retentionDays: number;
  /**
   * One stored response, its input and output as JSON text, at most this many bytes
   * (TOLLGATE_RESPONSES_MAX_BYTES).
   */
  maxBytes: number;
  /**
   * One organization's stored responses together, at most this many bytes
   * (TOLLGATE_RESPONSES_ORG_MAX_BYTES).
   */
  orgMaxBytes: number;
  /**
   * A conversation continued by `previous_response_id` reaches back at most this many turns
   * (TOLLGATE_RESPONSES_CHAIN_MAX_TURNS)…
   */
  chainMaxTurns: number;
  /** …and at most this many stored bytes (TOLLGATE_RESPONSES_CHAIN_MAX_BYTES). */
  chainMaxBytes: number;
  /**
   * How long a save may wait, on a busy gateway, for others to be written with it in one
   * statement (TOLLGATE_RESPONSES_SAVE_WAIT_MS).
   */
  waitMs: number;
  /**
   * Background responses (`background: true`): one organization's queued and running at most
   * (TOLLGATE_RESPONSES_MAX_BACKGROUND)…
   */
  maxBackground: number;
  /**
   * …the events kept of each streamed one, for `starting_after`
   * (TOLLGATE_RESPONSES_BACKGROUND_MAX_EVENTS)…
   */
  backgroundMaxEvents: number;
  /**
   * …and how long a replica's claim on one lasts unless renewed
   * (TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS).
   */
  backgroundLeaseMs: number;
  /**
   * One request's `input` holds at most this many `item_reference`s
   * (TOLLGATE_RESPONSES_MAX_REFERENCES).
   */
  maxReferences: number;
}

/**
 * Conversations (`gateway/conversations/store.ts`): how long they are kept and how large they may
 * grow.
 */
export interface ConversationsSettings {
  /**
   * A conversation is gone this many days after its last change
   * (TOLLGATE_CONVERSATIONS_RETENTION_DAYS).
   */
  retentionDays: number;
  /** Live conversations one organization may have (TOLLGATE_CONVERSATIONS_ORG_MAX). */
  orgMax: number;
  /** Items one conversation may hold (TOLLGATE_CONVERSATIONS_MAX_ITEMS). */
  maxItems: number;
  /** Bytes of JSON its items may hold together (TOLLGATE_CONVERSATIONS_MAX_BYTES). */
  maxBytes: number;
}

/**
 * Uploaded files (`/v1/files`, `gateway/files/`): how large one may be, and how many an
 * organization keeps.
 */
export interface FilesSettings {
  /** One file, at most this many bytes (TOLLGATE_FILES_MAX_BYTES). */
  maxBytes: number;
  /** A batch file, at most this many requests (TOLLGATE_FILES_MAX_LINES). */
  maxLines: number;
  /** Files one organization may keep (TOLLGATE_FILES_ORG_MAX)… */
  orgMax: number;
  /** …and their bytes together (TOLLGATE_FILES_ORG_MAX_BYTES). */
  orgMaxBytes: number;
}

/** Batches (`/v1/batches`, `gateway/batches/`): how many run, how fast, and how long they may take. */
export interface BatchesSettings {
  /**
   * Batches one organization may have validating, in progress or finalizing
   * (TOLLGATE_BATCHES_ORG_MAX).
   */
  orgMax: number;
  /** Lines one gateway replica runs at once, all batches together (TOLLGATE_BATCHES_CONCURRENCY). */
  concurrency: number;
  /** A claim on a line or a batch lasts this long unless renewed (TOLLGATE_BATCHES_LEASE_MS). */
  leaseMs: number;
  /**
   * What a `24h` window lasts, in seconds: shorter only to test expiry
   * (TOLLGATE_BATCHES_WINDOW_SECONDS).
   */
  windowSeconds: number;
  /**
   * How long a batch may stay `validating`, from its creation, before it is `failed` with `errors`
   * (TOLLGATE_BATCHES_VALIDATING_SECONDS).
   */
  validatingSeconds: number;
}
