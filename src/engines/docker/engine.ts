import type { DockerDefinition } from '../definitions.js';
import type { Engine } from '../types.js';
import { ensureImage } from './containers.js';
import { reconcile } from './reconcile.js';
import { rollingRestart } from './restart.js';
import { acquireReplica, engineStatus } from './routing.js';
import { specHash } from './spec.js';
import type { DockerEngineOptions, EngineState } from './state.js';

export { removeEngineContainers } from './containers.js';
export type { DockerEngineOptions } from './state.js';

/**
 * One model served by vLLM containers on a Docker engine. A loop reconciles
 * the containers with the definition every `pollMs` (`reconcile.ts`) and
 * health-checks every replica (`health.ts`): a replica gets traffic
 * (`routing.ts`) only after `/health` answers 200, and leaves rotation when
 * it stops answering. Scaling reconciles at once; restarts roll (`restart.ts`).
 *
 * @example
 * const engine = await startDockerEngine(definition, { docker, log, env: process.env, pollMs: 2000, deployment: 'prod' });
 * const target = engine.acquire();
 */
export async function startDockerEngine(definition: DockerDefinition, options: DockerEngineOptions): Promise<Engine> {
  const state: EngineState = {
    definition,
    options,
    spec: specHash(definition, options.env),
    desired: definition.replicas,
    replicas: new Map(),
    restarts: new Map(),
    replaced: new Map(),
    rotation: 0,
    closed: false,
  };
  const log = options.log;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const pass = () => reconcile(state);

  /** Runs a reconcile pass after any in progress, so passes never overlap. */
  const reconcileNow = (): Promise<void> => (running = running.then(pass, pass));

  const schedule = (): void => {
    if (state.closed) return;
    timer = setTimeout(() => {
      running = pass()
        .catch((error: Error) => log.error('engine reconcile failed', { model: definition.model, detail: error.message }))
        .finally(schedule);
    }, options.pollMs);
    timer.unref();
  };

  await ensureImage(state);
  await reconcileNow().catch((error: Error) => log.error('engine reconcile failed', { model: definition.model, detail: error.message }));
  schedule();

  return {
    kind: 'docker',
    modelId: definition.model,
    acquire: (exclude) => acquireReplica(state, exclude),
    status: () => engineStatus(state),
    async scale(count) {
      state.desired = count;
      await reconcileNow();
    },
    async restart() {
      rollingRestart(state, reconcileNow);
    },
    async close() {
      state.closed = true;
      clearTimeout(timer);
      await running.catch(() => {});
    },
  };
}
