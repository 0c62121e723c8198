import type { AbortFlag } from '../types.js';
import type { EngineState } from './state.js';

/** How often a request waiting for a first replica looks again. */
const LOOK_EVERY_MS = 100;

/**
 * For an engine that scales to zero (`min_replicas: 0`) with no replica
 * ready: counts the request as waiting (so the autoscaler starts a replica
 * at once, `autoscale.ts`) and resolves when one is ready, the client
 * leaves, or `autoscaling.cold_start_wait_s` passed; the caller then asks
 * for a replica as usual and gets the 503 with Retry-After if none came.
 * Null, so the request path does not wait on a promise, when a replica is
 * ready or the engine never scales to zero.
 *
 * @example
 * const waiting = engine.whenReady?.(call);
 * if (waiting) await waiting;
 */
export function waitForReplica(
  state: EngineState,
  reconcileNow: () => Promise<void>,
  call?: AbortFlag,
): Promise<void> | null {
  if (state.bounds.min > 0 || state.bounds.max === 0) return null;
  const ready = () => [...state.replicas.values()].some((r) => r.state === 'ready');
  if (ready()) return null;
  const deadline = Date.now() + state.definition.autoscaling.cold_start_wait_s * 1000;
  state.autoscale.coldWaiters += 1;
  // Not awaited: the pass scales up from zero, and a failed pass is logged by the loop's next one.
  reconcileNow().catch(() => {});
  return (async () => {
    try {
      while (!ready() && !state.closed && !call?.aborted && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, LOOK_EVERY_MS));
      }
    } finally {
      state.autoscale.coldWaiters -= 1;
    }
  })();
}
