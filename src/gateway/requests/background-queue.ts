import type { Context } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { AuthorizedRequest, BilledCall } from './authorize.js';
import type { BilledDeps, ProtocolCall } from './endpoint.js';

/** An admitted call to run in the background. */
export interface QueuedCall {
  call: BilledCall;
  protocol: ProtocolCall;
  path: string;
  streamed: boolean;
}

/**
 * Where `serveBilled` hands a request that runs after its answer (the Responses API's `background:
 * true`): admitted as any call, its hold taken, then queued and answered at once
 * (`responses/background.ts` implements it).
 */
export interface BackgroundQueue {
  /** Whether this request runs in the background. */
  wants(request: AuthorizedRequest): boolean;
  /**
   * Queues the admitted call and answers its client; `streamed` says whether the client asked for a
   * stream, `path` is its endpoint's on the engine.
   */
  queue(c: Context<GatewayEnv>, deps: BilledDeps, job: QueuedCall): Promise<Response>;
}
