import type Docker from 'dockerode';
import { containerSpec, ownContainers, type Placement } from './spec.js';
import type { EngineState } from './state.js';

/** The Docker client of one of the engine's hosts, by its `docker_host`. */
function dockerOn(state: EngineState, host: string): Docker {
  return (state.hosts.find((h) => h.definition.docker_host === host) ?? state.hosts[0]!).docker;
}

/**
 * Makes sure the engine's image is on every Docker engine it runs on that answers, pulling it
 * unless the definition says `pull: never`.
 */
export async function ensureImages(state: EngineState): Promise<void> {
  const results = await Promise.allSettled(state.hosts.map((host) => ensureImage(state, host.docker)));
  // One host down must not stop the engine; none with the image is a definition error.
  if (results.every((r) => r.status === 'rejected')) throw (results[0] as PromiseRejectedResult).reason;
}

async function ensureImage(state: EngineState, docker: Docker): Promise<void> {
  const { log } = state.options;
  const { image, pull, model } = state.definition;
  try {
    await docker.getImage(image).inspect();
  } catch {
    if (pull === 'never') throw new Error(`image ${image} is not on the engine and pull is "never"`);
    log.info('pulling engine image', { model, image });
    const stream = await docker.pull(image);
    await new Promise((resolve, reject) =>
      docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve(undefined))),
    );
  }
}

/** Creates and starts replica `index` where it was placed, and tracks it. */
export async function createContainer(
  state: EngineState,
  index: number,
  placement: Placement,
  track: (id: string) => void,
): Promise<void> {
  const { env, deployment, log } = state.options;
  const docker = dockerOn(state, placement.host.docker_host);
  const container = await docker.createContainer(containerSpec(state.definition, index, env, deployment, placement));
  try {
    await container.start();
  } catch (error) {
    // Not started (a GPU the runtime refused, a port taken): leave nothing behind that holds its
    // GPUs.
    await container.remove({ force: true }).catch(() => {});
    throw error;
  }
  track(container.id);
  log.info('engine replica started', {
    model: state.definition.model,
    replica: index,
    container: container.id.slice(0, 12),
    host: placement.host.docker_host,
    gpus: placement.gpus,
  });
}

/** Removes a container on a host (stopping it if needed); one already gone is fine. */
export async function removeContainer(state: EngineState, host: string, id: string, reason: string): Promise<void> {
  await dockerOn(state, host)
    .getContainer(id)
    .remove({ force: true })
    .catch((error: { statusCode?: number }) => {
      if (error.statusCode !== 404) throw error;
    });
  state.options.log.info('engine replica removed', {
    model: state.definition.model,
    container: id.slice(0, 12),
    reason,
  });
}

/**
 * Stops and removes every container of an engine (on shutdown with
 * TOLLGATE_ENGINES_ON_SHUTDOWN=stop).
 */
export async function removeEngineContainers(docker: Docker, model: string, deployment: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: ownContainers(deployment, model) } });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
}
