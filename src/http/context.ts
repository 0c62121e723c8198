import type { AuthenticatedKey } from '../keys/service.js';

/** Hono's per-request variables, shared by every route of the app. */
export interface GatewayEnv {
  Variables: {
    requestId: string;
    /** Set by the key middleware on authenticated /v1 routes. */
    caller: AuthenticatedKey;
  };
}
