import type Docker from 'dockerode';
import { containerSpec, ownContainers } from './spec.js';
import type { EngineState } from './state.js';

/** The engine's containers (this deployment's, this model's), running or not. */
export function listContainers(state: EngineState) {
  const { docker, deployment } = state.options;
  return docker.listContainers({ all: true, filters: { label: ownContainers(deployment, state.definition.model) } });
}

/** Makes sure the engine's image is on the Docker engine, pulling it unless the definition says `pull: never`. */
export async function ensureImage(state: EngineState): Promise<void> {
  const { docker, log } = state.options;
  const { image, pull, model } = state.definition;
  try {
    await docker.getImage(image).inspect();
  } catch {
    if (pull === 'never') throw new Error(`image ${image} is not on the engine and pull is "never"`);
    log.info('pulling engine image', { model, image });
    const stream = await docker.pull(image);
    await new Promise((resolve, reject) => docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve(undefined))));
  }
}

/** Creates and starts replica `index` and tracks it; does nothing while the replica's back-off lasts. */
export async function createContainer(state: EngineState, index: number, track: (id: string) => void): Promise<void> {
  const backoff = state.restarts.get(index);
  if (backoff && Date.now() < backoff.notBefore) return;
  const { docker, env, deployment, log } = state.options;
  const container = await docker.createContainer(containerSpec(state.definition, index, env, deployment));
  await container.start();
  track(container.id);
  log.info('engine replica started', { model: state.definition.model, replica: index, container: container.id.slice(0, 12) });
}

/** Removes a container (stopping it if needed); one already gone is fine. */
export async function removeContainer(state: EngineState, id: string, reason: string): Promise<void> {
  await state.options.docker
    .getContainer(id)
    .remove({ force: true })
    .catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 404) throw error;
    });
  state.options.log.info('engine replica removed', { model: state.definition.model, container: id.slice(0, 12), reason });
}

/** Stops and removes every container of an engine (on shutdown with TOLLGATE_ENGINES_ON_SHUTDOWN=stop). */
export async function removeEngineContainers(docker: Docker, model: string, deployment: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: ownContainers(deployment, model) } });
  await Promise.all(containers.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => {})));
}
