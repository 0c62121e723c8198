import { removeContainer } from './containers.js';
import type { EngineState } from './state.js';

/** A restart waits this long for a replica's requests to finish before replacing it anyway. */
const DRAIN_TIMEOUT_MS = 60_000;

/**
 * Rolling restart: drains one replica, replaces it, waits until the new one
 * is ready, then the next, so a model with two or more replicas keeps
 * serving. Runs in the background (vLLM loads for minutes).
 */
export function rollingRestart(state: EngineState, reconcileNow: () => Promise<void>): void {
  const { definition, options } = state;
  const waitFor = async (done: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!done() && !state.closed && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs, 500)));
  };
  const indexes = [...state.replicas.keys()].sort((a, b) => a - b);
  void (async () => {
    for (const index of indexes) {
      const replica = state.replicas.get(index);
      if (state.closed || !replica) continue;
      replica.state = 'draining';
      replica.retiring = true;
      await waitFor(() => replica.inFlight === 0, DRAIN_TIMEOUT_MS);
      state.replicas.delete(index);
      await removeContainer(state, replica.host, replica.containerId, 'restart');
      await reconcileNow();
      await waitFor(
        () => state.closed || state.replicas.get(index)?.state === 'ready',
        definition.startup_timeout_s * 1000,
      );
    }
  })().catch((error: Error) =>
    options.log.error('engine restart failed', { model: definition.model, detail: error.message }),
  );
}
