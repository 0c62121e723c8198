import { randomUUID } from 'node:crypto';
import { type DockerDefinition, replicaBounds } from '../docker-definition.js';
import type { Engine } from '../types.js';
import { autoscale } from './autoscale.js';
import { dockerClientFor } from '../../../shared/docker/client.js';
import { waitForReplica } from './cold-start.js';
import { ensureImages } from './containers.js';
import { GpusBeingPlaced, hostsOf } from './hosts.js';
import { reconcile } from './reconcile.js';
import { rollingRestart } from './restart.js';
import { acquireReplica, engineStatus, freeSlotsOf, startRouting } from './routing.js';
import { memoryScaleStore } from './scale-store.js';
import { specHash } from './spec.js';
import type { DockerEngineOptions, EngineState } from './state.js';

export { removeEngineContainers } from './containers.js';
export type { DockerEngineOptions } from './state.js';

/**
 * One model served by vLLM containers on a Docker engine. A loop reconciles
 * the containers with the definition every `pollMs` (`reconcile.ts`) and
 * health-checks every replica (`health.ts`): a replica gets traffic
 * (`routing.ts`) only after `/health` answers 200, and leaves rotation when
 * it stops answering. Replicas are placed over the engine's hosts and GPUs
 * (`placement.ts`); the count is shared with the other gateway processes
 * (`scale-store.ts`) and moved by `autoscale.ts` after each pass. Scaling
 * reconciles at once; restarts roll (`restart.ts`).
 *
 * @example
 * const engine = await startDockerEngine(definition, { docker, log, env: process.env, pollMs: 2000, deployment: 'prod' });
 * const target = engine.acquire();
 */
export async function startDockerEngine(definition: DockerDefinition, options: DockerEngineOptions): Promise<Engine> {
  const state = await initialState(definition, options);
  const log = options.log;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const pass = () => reconcile(state).then(() => autoscale(state));

  /** Runs a reconcile pass after any in progress, so passes never overlap. */
  const reconcileNow = (): Promise<void> => (running = running.then(pass, pass));

  const schedule = (): void => {
    if (state.closed) return;
    timer = setTimeout(() => {
      running = pass()
        .catch((error: Error) =>
          log.error('engine reconcile failed', { model: definition.model, detail: error.message }),
        )
        .finally(schedule);
    }, options.pollMs);
    timer.unref();
  };

  startRouting(state);
  await ensureImages(state);
  await reconcileNow().catch((error: Error) =>
    log.error('engine reconcile failed', { model: definition.model, detail: error.message }),
  );
  schedule();

  return {
    kind: 'docker',
    modelId: definition.model,
    acquire: (exclude, hint) => acquireReplica(state, exclude, hint),
    whenReady: (call) => waitForReplica(state, reconcileNow, call),
    freeSlots: () => freeSlotsOf(state),
    schedulesByPriority: () => definition.scheduling_policy === 'priority',
    waitingInGateway: (count) => {
      state.autoscale.gatewayWaiting = count;
    },
    status: () => engineStatus(state),
    async scale(count) {
      await state.scaleStore.set(count);
      state.desired = count;
      await reconcileNow();
    },
    async restart() {
      rollingRestart(state, reconcileNow);
    },
    async close() {
      state.closed = true;
      clearTimeout(timer);
      state.scraper?.stop();
      await running.catch(() => {});
    },
  };
}

/**
 * The engine's state at start: its hosts' clients, and the replica count. A
 * fixed count is the definition's; an autoscaled one is the shared count,
 * kept within the (perhaps changed) bounds.
 */
async function initialState(definition: DockerDefinition, options: DockerEngineOptions): Promise<EngineState> {
  const bounds = replicaBounds(definition);
  const scaleStore = options.scaleStore ?? memoryScaleStore();
  const hosts = hostsOf(definition).map((host, i) => ({
    definition: host,
    docker: i === 0 && !definition.hosts ? options.docker : (options.dockerFor ?? dockerClientFor)(host),
    failures: 0,
    down: false,
    usedGpus: new Set<string>(),
  }));
  const stored = await scaleStore.load(bounds.min);
  const desired = bounds.min === bounds.max ? bounds.min : Math.min(Math.max(stored, bounds.min), bounds.max);
  if (desired !== stored) await scaleStore.set(desired);
  return {
    definition,
    options,
    spec: specHash(definition, options.env),
    desired,
    bounds,
    hosts,
    placing: options.placing ?? new GpusBeingPlaced(),
    scaleStore,
    holder: randomUUID(),
    autoscale: {
      busySince: null,
      idleSince: null,
      step: null,
      coldWaiters: 0,
      gatewayWaiting: 0,
      seenDesired: desired,
    },
    replicas: new Map(),
    restarts: new Map(),
    replaced: new Map(),
    rotation: 0,
    closed: false,
  };
}
