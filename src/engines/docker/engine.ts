import type Docker from 'dockerode';
import type { Logger } from '../../http/log.js';
import type { DockerDefinition } from '../definitions.js';
import type { Engine, EngineStatus, ReplicaState, UpstreamTarget } from '../types.js';
import { containerName, containerSpec, LABELS, ownContainers, replicaAddress, specHash } from './spec.js';

export interface DockerEngineOptions {
  docker: Docker;
  log: Logger;
  /** The gateway's environment, for `env_from`. */
  env: Record<string, string | undefined>;
  /** How often containers are reconciled and replicas health-checked. */
  pollMs: number;
  /** This gateway deployment's name (TOLLGATE_DEPLOYMENT): it touches only containers labelled with it. */
  deployment: string;
  /** Consecutive failed health checks before a ready replica is taken out. */
  unhealthyAfter?: number;
}

interface Replica {
  index: number;
  containerId: string;
  name: string;
  spec: string;
  url: string;
  state: ReplicaState;
  startedAt: number;
  inFlight: number;
  served: number;
  failures: number;
  /** Being replaced by a restart: it drains, and a reconcile pass must not put it back in rotation. */
  retiring?: boolean;
}

const MAX_BACKOFF_MS = 60_000;
/** A restart waits this long for a replica's requests to finish before replacing it anyway. */
const DRAIN_TIMEOUT_MS = 60_000;
const HEALTH_TIMEOUT_MS = 2_000;

/**
 * One model served by vLLM containers on a Docker engine. A loop reconciles
 * the containers with the definition (creates missing replicas, adopts running
 * ones after a gateway restart, replaces dead ones with back-off, drains and
 * removes extra ones) and health-checks every replica: a replica gets traffic
 * only after `/health` answers 200, and leaves rotation when it stops answering.
 *
 * @example
 * const engine = await startDockerEngine(definition, { docker, log, env: process.env, pollMs: 2000, deployment: 'prod' });
 * const target = engine.acquire();
 */
export async function startDockerEngine(definition: DockerDefinition, options: DockerEngineOptions): Promise<Engine> {
  const { docker, log } = options;
  const unhealthyAfter = options.unhealthyAfter ?? 3;
  const spec = specHash(definition, options.env);
  let desired = definition.replicas;
  const replicas = new Map<number, Replica>();
  // Back-off per replica index (consecutive deaths, reset once it is ready), and total replacements for operators.
  const restarts = new Map<number, { count: number; notBefore: number }>();
  const replaced = new Map<number, number>();
  let rotation = 0;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const listReplicas = () =>
    docker.listContainers({ all: true, filters: { label: ownContainers(options.deployment, definition.model) } });

  async function ensureImage(): Promise<void> {
    try {
      await docker.getImage(definition.image).inspect();
    } catch {
      if (definition.pull === 'never') throw new Error(`image ${definition.image} is not on the engine and pull is "never"`);
      log.info('pulling engine image', { model: definition.model, image: definition.image });
      const stream = await docker.pull(definition.image);
      await new Promise((resolve, reject) => docker.modem.followProgress(stream, (error) => (error ? reject(error) : resolve(undefined))));
    }
  }

  async function create(index: number): Promise<void> {
    const backoff = restarts.get(index);
    if (backoff && Date.now() < backoff.notBefore) return;
    const body = containerSpec(definition, index, options.env, options.deployment);
    const container = await docker.createContainer(body);
    await container.start();
    const address = replicaAddress(definition, index, options.deployment);
    replicas.set(index, {
      index,
      containerId: container.id,
      name: containerName(definition, index, options.deployment),
      spec,
      url: `http://${address.host}:${address.port}`,
      state: 'starting',
      startedAt: Date.now(),
      inFlight: 0,
      served: 0,
      failures: 0,
    });
    log.info('engine replica started', { model: definition.model, replica: index, container: container.id.slice(0, 12) });
  }

  async function remove(id: string, reason: string): Promise<void> {
    await docker
      .getContainer(id)
      .remove({ force: true })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 404) throw error;
      });
    log.info('engine replica removed', { model: definition.model, container: id.slice(0, 12), reason });
  }

  /** One pass: make the containers match the definition, then check every replica's health. */
  async function reconcile(): Promise<void> {
    const containers = await listReplicas();
    const seen = new Set<number>();
    for (const info of containers) {
      const index = Number(info.Labels[LABELS.replica]);
      const tracked = replicas.get(index);
      const current = Number.isInteger(index) && index < desired && info.Labels[LABELS.spec] === spec && !seen.has(index);
      if (!current) {
        // Extra replica (scaled down, or made from an older definition): drain it first.
        if (tracked && tracked.containerId === info.Id && tracked.inFlight > 0) {
          tracked.state = 'draining';
          seen.add(index);
          continue;
        }
        if (tracked?.containerId === info.Id) replicas.delete(index);
        await remove(info.Id, 'not wanted');
        continue;
      }
      seen.add(index);
      if (info.State !== 'running') {
        // Died: replace it, waiting longer after each death.
        replicas.delete(index);
        const previous = restarts.get(index) ?? { count: 0, notBefore: 0 };
        const delay = Math.min(1000 * 2 ** previous.count, MAX_BACKOFF_MS);
        restarts.set(index, { count: previous.count + 1, notBefore: Date.now() + delay });
        replaced.set(index, (replaced.get(index) ?? 0) + 1);
        log.warn('engine replica died; replacing it', { model: definition.model, replica: index, state: info.State, retryInMs: delay });
        await remove(info.Id, 'died');
        seen.delete(index);
        continue;
      }
      // Wanted again while it drained (scaled back up): back into rotation once healthy.
      if (tracked?.containerId === info.Id && tracked.state === 'draining' && !tracked.retiring) tracked.state = 'starting';
      if (!tracked || tracked.containerId !== info.Id) {
        // Running but not known to this process: a gateway restart. Adopt it.
        const address = replicaAddress(definition, index, options.deployment);
        replicas.set(index, {
          index,
          containerId: info.Id,
          name: info.Names[0]?.replace(/^\//, '') ?? containerName(definition, index, options.deployment),
          spec,
          url: `http://${address.host}:${address.port}`,
          state: 'starting',
          startedAt: info.Created * 1000,
          inFlight: 0,
          served: 0,
          failures: 0,
        });
        log.info('engine replica adopted', { model: definition.model, replica: index, container: info.Id.slice(0, 12) });
      }
    }
    for (const [index, replica] of replicas) {
      if (!containers.some((c) => c.Id === replica.containerId)) replicas.delete(index);
    }
    for (let index = 0; index < desired; index++) {
      if (!seen.has(index)) {
        await create(index).catch((error: Error & { statusCode?: number }) => {
          // 409: another gateway sharing this engine created it first; the next pass adopts it.
          if (error.statusCode !== 409) log.error('engine replica could not start', { model: definition.model, replica: index, detail: error.message });
        });
      }
    }
    await Promise.all([...replicas.values()].map(checkHealth));
  }

  async function checkHealth(replica: Replica): Promise<void> {
    const healthy = await fetch(`${replica.url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }).then(
      (response) => response.status === 200,
      () => false,
    );
    if (healthy) {
      replica.failures = 0;
      if (replica.state === 'starting' || replica.state === 'unhealthy') {
        if (replica.state === 'starting') restarts.delete(replica.index);
        replica.state = 'ready';
        log.info('engine replica ready', { model: definition.model, replica: replica.index });
      }
      return;
    }
    if (replica.state === 'starting') {
      // vLLM refuses connections while it loads a model; only a load past the budget is a failure.
      if (Date.now() - replica.startedAt > definition.startup_timeout_s * 1000) {
        log.error('engine replica did not become ready in time; replacing it', { model: definition.model, replica: replica.index });
        replicas.delete(replica.index);
        await remove(replica.containerId, 'startup timeout');
      }
      return;
    }
    replica.failures += 1;
    if (replica.state === 'ready' && replica.failures >= unhealthyAfter) {
      replica.state = 'unhealthy';
      log.warn('engine replica stopped answering; out of rotation', { model: definition.model, replica: replica.index });
    }
  }

  async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done() && !closed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs, 500)));
  }

  function schedule(): void {
    if (closed) return;
    timer = setTimeout(() => {
      running = reconcile()
        .catch((error: Error) => log.error('engine reconcile failed', { model: definition.model, detail: error.message }))
        .finally(schedule);
    }, options.pollMs);
    timer.unref();
  }

  /** Runs a reconcile pass after any in progress, so passes never overlap. */
  function reconcileNow(): Promise<void> {
    running = running.then(reconcile, reconcile);
    return running;
  }

  await ensureImage();
  await reconcileNow().catch((error: Error) => log.error('engine reconcile failed', { model: definition.model, detail: error.message }));
  schedule();

  return {
    kind: 'docker',
    modelId: definition.model,
    acquire(exclude) {
      const ready = [...replicas.values()].filter((r) => r.state === 'ready' && !exclude?.has(replicaId(r)));
      if (ready.length === 0) return null;
      // Least in flight; ties go round the ring so equal replicas share the load.
      const fewest = Math.min(...ready.map((r) => r.inFlight));
      const candidates = ready.filter((r) => r.inFlight === fewest);
      const replica = candidates[rotation++ % candidates.length]!;
      replica.inFlight += 1;
      replica.served += 1;
      let released = false;
      const target: UpstreamTarget = {
        baseUrl: `${replica.url}/v1`,
        servedModelName: definition.served_model_name ?? definition.model,
        headers: {},
        replicaId: replicaId(replica),
        release() {
          if (released) return;
          released = true;
          replica.inFlight -= 1;
        },
        markFailed() {
          if (replica.state === 'ready') replica.state = 'unhealthy';
        },
      };
      return target;
    },
    status(): EngineStatus {
      return {
        model: definition.model,
        kind: 'docker',
        desiredReplicas: desired,
        dockerHost: definition.docker_host,
        replicas: [...replicas.values()]
          .sort((a, b) => a.index - b.index)
          .map((r) => ({
            id: replicaId(r),
            state: r.state,
            container: { id: r.containerId, name: r.name },
            address: r.url.replace(/^http:\/\//, ''),
            startedAt: new Date(r.startedAt).toISOString(),
            uptimeSeconds: Math.floor((Date.now() - r.startedAt) / 1000),
            inFlight: r.inFlight,
            served: r.served,
            restarts: replaced.get(r.index) ?? 0,
          })),
      };
    },
    async scale(count) {
      desired = count;
      await reconcileNow();
    },
    async restart() {
      // Rolling: drain one replica, replace it, wait until the new one is ready, then the next,
      // so a model with two or more replicas keeps serving. Runs in the background: vLLM loads for minutes.
      const indexes = [...replicas.keys()].sort((a, b) => a - b);
      void (async () => {
        for (const index of indexes) {
          const replica = replicas.get(index);
          if (closed || !replica) continue;
          replica.state = 'draining';
          replica.retiring = true;
          await waitFor(() => replica.inFlight === 0, DRAIN_TIMEOUT_MS);
          replicas.delete(index);
          await remove(replica.containerId, 'restart');
          await reconcileNow();
          await waitFor(() => closed || replicas.get(index)?.state === 'ready', definition.startup_timeout_s * 1000);
        }
      })().catch((error: Error) => log.error('engine restart failed', { model: definition.model, detail: error.message }));
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await running.catch(() => {});
    },
  };

  function replicaId(replica: Replica): string {
    return `${definition.model}/${replica.index}`;
  }
}

/** Stops and removes every container of an engine (on shutdown with TOLLGATE_ENGINES_ON_SHUTDOWN=stop). */
export async function removeEngineContainers(docker: Docker, model: string, deployment: string): Promise<void> {
  const containers = await docker.listContainers({ all: true, filters: { label: ownContainers(deployment, model) } });
  await Promise.all(containers.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => {})));
}
