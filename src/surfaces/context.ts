import type { Actor } from '../platform/people/permissions.js';
import type { UserRow } from '../platform/people/users.js';

/** A person making a generic API or portal call, and how they proved it. */
export interface SignedInActor extends Actor {
  user: UserRow;
  /** The session's hash when the call came with a session cookie. */
  sessionHash?: string;
  /** The key's id when the call came with an API key. */
  keyId?: string;
}

// The surfaces' per-request variable, added to plumbing's (see shared/http/context.ts).
declare module '../shared/http/context.js' {
  interface RequestVariables {
    /** Set by the generic API's access middleware (`api/access.ts`). */
    actor: SignedInActor;
  }
}
