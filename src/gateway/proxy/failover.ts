import type { UpstreamTarget } from '../engines/types.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { CallAbort } from './call-abort.js';
import type { WrittenJson } from './client-body.js';
import type { EngineAgents } from './engine-agents.js';
import { type EngineResponse, postUpstream } from './upstream.js';
import { UpstreamError } from './upstream-failure.js';

export interface FailoverCall {
  /** A target not among `exclude`; throws when there is none (see Fleet.acquire). */
  acquire(exclude: ReadonlySet<string>): UpstreamTarget;
  path: string;
  /** The upstream body for a target (it names the target's served model), or its JSON. */
  body(target: UpstreamTarget): Record<string, unknown> | string | WrittenJson;
  /** Headers for every replica tried, besides the target's own (the trace's `traceparent`). */
  headers?: Record<string, string>;
  clientModel: string;
  abort: CallAbort;
  /** The process's keep-alive connections to the engines. */
  agents: EngineAgents;
  /**
   * Reads the answer whole before the call counts as answered, for a receiver that is given none of
   * it before its end (a JSON call): a replica whose answer breaks off or fails in it (an
   * `UpstreamError`) has sent nothing anyone saw, and is replaced as one that failed before
   * answering is.
   */
  readWhole?(response: EngineResponse, target: UpstreamTarget): Promise<void>;
}

/**
 * Sends a request upstream, and when the replica fails before anything
 * reached the client (unreachable, or a 5xx answer, or for a JSON call an
 * answer that broke off in `readWhole`), sends it to another ready replica of
 * the same model, each replica at most once. The target that answered is
 * returned to the caller, who releases it when the request ends.
 *
 * @example
 * const { response, target } = await postWithFailover({ acquire: (x) => fleet.acquire(model, x), path: '/embeddings', body: () => body, clientModel, abort });
 */
export async function postWithFailover(
  call: FailoverCall,
): Promise<{ response: EngineResponse; target: UpstreamTarget }> {
  const tried = new Set<string>();
  let lastFailure: UpstreamError | null = null;
  for (;;) {
    let target: UpstreamTarget;
    try {
      target = call.acquire(tried);
    } catch (error) {
      // No other replica: the client hears about the failure it had, not about an empty rotation.
      if (lastFailure && error instanceof GatewayError) throw lastFailure;
      throw error;
    }
    try {
      const response = await postUpstream({
        target,
        path: call.path,
        body: call.body(target),
        headers: call.headers,
        clientModel: call.clientModel,
        abort: call.abort,
        agents: call.agents,
      });
      if (call.readWhole) await call.readWhole(response, target);
      return { response, target };
    } catch (error) {
      target.release();
      if (!(error instanceof UpstreamError) || call.abort.aborted) throw error;
      if (error.failure === 'unreachable') target.markFailed();
      tried.add(target.replicaId);
      lastFailure = error;
    }
  }
}
