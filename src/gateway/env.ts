import type { AuthenticatedKey } from './keys/service.js';

// The billed path's per-request variable, added to plumbing's (see shared/http/context.ts).
declare module '../shared/http/context.js' {
  interface RequestVariables {
    /** Set by the key middleware on authenticated /v1 routes. */
    caller: AuthenticatedKey;
  }
}
