import { removeContainer } from './containers.js';
import type { EngineState, Replica } from './state.js';

const HEALTH_TIMEOUT_MS = 2_000;

/**
 * Checks one replica's `/health`: a starting replica enters rotation on its
 * first 200 (and one that loads past `startup_timeout_s` is replaced); a
 * ready one leaves rotation after `unhealthyAfter` failed checks in a row,
 * and comes back when it answers again.
 */
export async function checkHealth(state: EngineState, replica: Replica): Promise<void> {
  const { definition, options } = state;
  const healthy = await fetch(`${replica.url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }).then(
    (response) => response.status === 200,
    () => false,
  );
  if (healthy) {
    replica.failures = 0;
    if (replica.state === 'starting' || replica.state === 'unhealthy') {
      if (replica.state === 'starting') state.restarts.delete(replica.index);
      replica.state = 'ready';
      options.log.info('engine replica ready', { model: definition.model, replica: replica.index });
    }
    return;
  }
  if (replica.state === 'starting') {
    // vLLM refuses connections while it loads a model; only a load past the budget is a failure.
    if (Date.now() - replica.startedAt > definition.startup_timeout_s * 1000) {
      options.log.error('engine replica did not become ready in time; replacing it', {
        model: definition.model,
        replica: replica.index,
      });
      state.replicas.delete(replica.index);
      await removeContainer(state, replica.host, replica.containerId, 'startup timeout');
    }
    return;
  }
  replica.failures += 1;
  if (replica.state === 'ready' && replica.failures >= (options.unhealthyAfter ?? 3)) {
    replica.state = 'unhealthy';
    options.log.warn('engine replica stopped answering; out of rotation', {
      model: definition.model,
      replica: replica.index,
    });
  }
}
