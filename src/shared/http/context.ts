import type { AuthenticatedKey } from '../../gateway/keys/service.js';
import type { Actor } from '../../platform/people/permissions.js';
import type { UserRow } from '../../platform/people/users.js';
import type { RequestTrace } from '../observability/tracing.js';

/** A person making a generic API or portal call, and how they proved it. */
export interface SignedInActor extends Actor {
  user: UserRow;
  /** The session's hash when the call came with a session cookie. */
  sessionHash?: string;
  /** The key's id when the call came with an API key. */
  keyId?: string;
}

/** Hono's per-request variables, shared by every route of the app. */
export interface GatewayEnv {
  Variables: {
    requestId: string;
    /** Set by the key middleware on authenticated /v1 routes. */
    caller: AuthenticatedKey;
    /** Set by the generic API's access middleware (`api/access.ts`). */
    actor: SignedInActor;
    /** The catalog model a billed request asked for, once known: the `model` label of its metrics. */
    model: string | undefined;
    /** The request's spans, when tracing is on (`observability/observer.ts`). */
    trace: RequestTrace | undefined;
    /** Set when a billed call's answer is a live stream: it is recorded when it ends, not when its headers leave. */
    streaming: boolean | undefined;
  };
}
