import { createContainer, listContainers, removeContainer } from './containers.js';
import { checkHealth } from './health.js';
import { LABELS } from './spec.js';
import { type EngineState, trackReplica } from './state.js';

const MAX_BACKOFF_MS = 60_000;

/**
 * One pass: make the containers match the definition, then check every
 * replica's health. Creates missing replicas, adopts running ones after a
 * gateway restart, replaces dead ones with back-off (1 s doubling to 60 s),
 * drains and then removes extra or outdated ones.
 */
export async function reconcile(state: EngineState): Promise<void> {
  const { definition, options, replicas, restarts } = state;
  const log = options.log;
  const containers = await listContainers(state);
  const seen = new Set<number>();
  for (const info of containers) {
    const index = Number(info.Labels[LABELS.replica]);
    const tracked = replicas.get(index);
    const current = Number.isInteger(index) && index < state.desired && info.Labels[LABELS.spec] === state.spec && !seen.has(index);
    if (!current) {
      // Extra replica (scaled down, or made from an older definition): drain it first.
      if (tracked && tracked.containerId === info.Id && tracked.inFlight > 0) {
        tracked.state = 'draining';
        seen.add(index);
        continue;
      }
      if (tracked?.containerId === info.Id) replicas.delete(index);
      await removeContainer(state, info.Id, 'not wanted');
      continue;
    }
    seen.add(index);
    if (info.State !== 'running') {
      // Died: replace it, waiting longer after each death.
      replicas.delete(index);
      const previous = restarts.get(index) ?? { count: 0, notBefore: 0 };
      const delay = Math.min(1000 * 2 ** previous.count, MAX_BACKOFF_MS);
      restarts.set(index, { count: previous.count + 1, notBefore: Date.now() + delay });
      state.replaced.set(index, (state.replaced.get(index) ?? 0) + 1);
      log.warn('engine replica died; replacing it', { model: definition.model, replica: index, state: info.State, retryInMs: delay });
      await removeContainer(state, info.Id, 'died');
      seen.delete(index);
      continue;
    }
    // Wanted again while it drained (scaled back up): back into rotation once healthy.
    if (tracked?.containerId === info.Id && tracked.state === 'draining' && !tracked.retiring) tracked.state = 'starting';
    if (!tracked || tracked.containerId !== info.Id) {
      // Running but not known to this process: a gateway restart. Adopt it.
      trackReplica(state, index, { id: info.Id, name: info.Names[0]?.replace(/^\//, ''), startedAt: info.Created * 1000 });
      log.info('engine replica adopted', { model: definition.model, replica: index, container: info.Id.slice(0, 12) });
    }
  }
  for (const [index, replica] of replicas) {
    if (!containers.some((c) => c.Id === replica.containerId)) replicas.delete(index);
  }
  for (let index = 0; index < state.desired; index++) {
    if (seen.has(index)) continue;
    await createContainer(state, index, (id) => trackReplica(state, index, { id, startedAt: Date.now() })).catch((error: Error & { statusCode?: number }) => {
      // 409: another gateway sharing this engine created it first; the next pass adopts it.
      if (error.statusCode !== 409) log.error('engine replica could not start', { model: definition.model, replica: index, detail: error.message });
    });
  }
  await Promise.all([...replicas.values()].map((replica) => checkHealth(state, replica)));
}
