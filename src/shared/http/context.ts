import type { RequestTrace } from '../observability/tracing.js';

/**
 * Hono's per-request variables. Plumbing's are declared here; each layer above
 * adds its own where their types live, by declaration merging (as Hono's own
 * `ContextVariableMap` is extended): `gateway/env.ts` the caller's key,
 * `surfaces/context.ts` the signed-in actor. So one `GatewayEnv` serves every
 * route without this layer naming a type from the ones above it.
 */
export interface RequestVariables {
  requestId: string;
  /** The catalog model a billed request asked for, once known: the `model` label of its metrics. */
  model: string | undefined;
  /** The request's spans, when tracing is on (`observability/observer.ts`). */
  trace: RequestTrace | undefined;
  /**
   * Set when a billed call's answer is a live stream: it is recorded when it ends, not when its
   * headers leave.
   */
  streaming: boolean | undefined;
}

/** The Hono environment of every route of the app. */
export interface GatewayEnv {
  Variables: RequestVariables;
}
