import type { Config } from '../../config/index.js';
import type { Database } from '../../shared/db/client.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Logger } from '../../shared/http/log.js';
import type { EngineDefinition, SimulatorDefinition, StaticDefinition } from './definitions.js';
import type { DockerDefinition, DockerHostDefinition } from './docker-definition.js';
import { dockerClientFor } from '../../shared/docker/client.js';
import { removeEngineContainers, startDockerEngine } from './docker/engine.js';
import { GpusBeingPlaced, hostsOf } from './docker/hosts.js';
import { memoryScaleStore, pgScaleStore } from './docker/scale-store.js';
import { LABELS, ownContainers } from './docker/spec.js';
import type { LoadOf } from './load.js';
import { startSimulatorEngines } from './simulator.js';
import type { LookupAll } from './server-list.js';
import { startServersEngine } from './servers.js';
import { createStaticEngine } from './static.js';
import type { AbortFlag, Engine, EngineStatus, RoutingHint, UpstreamTarget } from './types.js';

/**
 * All engines, by catalog model id. The request path asks it for a target and
 * knows nothing of the engine's kind; the management API asks it for status,
 * scaling and restarts.
 *
 * @example
 * const fleet = await startFleet(definitions, { env: process.env, config, log });
 * const target = fleet.acquire('sim-chat');
 */
export interface Fleet {
  /**
   * A target for the model, not among `exclude` (replica ids); 503 with Retry-After when none is
   * ready. `hint` carries the prompt to the engine's router.
   */
  acquire(modelId: string, exclude?: ReadonlySet<string>, hint?: RoutingHint): UpstreamTarget;
  /**
   * For a model whose engine scales to zero and has no replica ready: settles once one is (or the
   * bounded wait is over); else null.
   */
  whenReady(modelId: string, call?: AbortFlag): Promise<void> | null;
  /**
   * Sequences the model's engine can take now beyond other gateways' (`Engine.freeSlots`); null
   * when unknown.
   */
  freeSlots(modelId: string): number | null;
  /** Whether the model's engine schedules by priority (`Engine.schedulesByPriority`). */
  schedulesByPriority(modelId: string): boolean;
  /**
   * Tells the model's engine how many requests wait in this gateway for its room
   * (`Engine.waitingInGateway`).
   */
  waitingInGateway(modelId: string, count: number): void;
  engines(): Engine[];
  status(): EngineStatus[];
  /** The built-in simulator's address, when one runs (for logs and tests). */
  simulatorUrl: string | null;
  close(): Promise<void>;
}

export interface FleetOptions {
  env: Record<string, string | undefined>;
  config: Pick<Config, 'simulator' | 'engines' | 'deployment'> & Partial<Pick<Config, 'routing'>>;
  log: Logger;
  /**
   * The store the Docker engines' replica counts and scaling leases are shared through; without
   * one, each process keeps its own.
   */
  db?: Database;
  /**
   * Replicas' vLLM load from elsewhere, for tests; each Docker engine otherwise scrapes its
   * replicas itself (TOLLGATE_ROUTING_*), and without a reading the autoscaler counts this
   * gateway's own requests (`docker/autoscale.ts`).
   */
  loadOf?: LoadOf;
  /**
   * How `dns` engines resolve their names (tests: a resolver of their own); the system's
   * getaddrinfo otherwise.
   */
  lookup?: LookupAll;
}

export async function startFleet(definitions: EngineDefinition[], options: FleetOptions): Promise<Fleet> {
  const simulated = definitions.filter((d): d is SimulatorDefinition => d.kind === 'simulator');
  const fixed = definitions.filter((d): d is StaticDefinition => d.kind === 'static');
  const dockerized = definitions.filter((d): d is DockerDefinition => d.kind === 'docker');
  const { engines: simulatorEngines, simulator } = await startSimulatorEngines(simulated, options.config.simulator);
  const deployment = options.config.deployment;
  await removeUndefinedContainers(dockerized, deployment, options.log);
  const { db, log, env } = options;
  const { loadOf } = options;
  // The fleet's engines reconcile apart on shared hosts: what one is placing, the others must not
  // take.
  const placing = new GpusBeingPlaced();
  const dockerEngines = await Promise.all(
    dockerized.map((d) => {
      const scaleStore = db ? pgScaleStore(db, deployment, d.model) : memoryScaleStore();
      return startDockerEngine(d, {
        docker: dockerClientFor(d),
        log,
        env,
        pollMs: options.config.engines.pollMs,
        deployment,
        scaleStore,
        loadOf,
        routing: options.config.routing,
        placing,
      });
    }),
  );
  const { pollMs, dnsRefreshMs } = options.config.engines;
  const serverEngines = await Promise.all(
    fixed
      .filter((d) => d.url === undefined)
      .map((d) =>
        startServersEngine(d, {
          env,
          log,
          pollMs,
          dnsRefreshMs,
          routing: options.config.routing,
          lookup: options.lookup,
        }),
      ),
  );
  const single = fixed.flatMap((d) => (d.url === undefined ? [] : [createStaticEngine({ ...d, url: d.url }, env)]));
  const all = [...simulatorEngines, ...single, ...serverEngines, ...dockerEngines];
  const byModel = new Map(all.map((engine) => [engine.modelId, engine]));
  return {
    acquire: (modelId, exclude, hint) => byModel.get(modelId)?.acquire(exclude, hint) ?? noEngineReady(),
    whenReady: (modelId, call) => byModel.get(modelId)?.whenReady?.(call) ?? null,
    freeSlots: (modelId) => byModel.get(modelId)?.freeSlots?.() ?? null,
    schedulesByPriority: (modelId) => byModel.get(modelId)?.schedulesByPriority?.() ?? false,
    waitingInGateway: (modelId, count) => byModel.get(modelId)?.waitingInGateway?.(count),
    engines: () => all,
    status: () => all.map((engine) => engine.status()),
    simulatorUrl: simulator?.url ?? null,
    async close() {
      await Promise.all(all.map((engine) => engine.close()));
      if (options.config.engines.onShutdown === 'stop') {
        await Promise.all(
          dockerized.flatMap((d) =>
            hostsOf(d).map((host) =>
              removeEngineContainers(dockerClientFor(host), d.model, deployment).catch(() => {}),
            ),
          ),
        );
      }
      await simulator?.close();
    },
  };
}

/**
 * This deployment's containers on a known Docker engine for a model no
 * definition asks for any more (there) are removed. Other deployments'
 * containers on the same host are never touched.
 */
async function removeUndefinedContainers(
  definitions: DockerDefinition[],
  deployment: string,
  log: Logger,
): Promise<void> {
  const hosts = new Map<string, { host: DockerHostDefinition; models: Set<string> }>();
  for (const d of definitions) {
    for (const host of hostsOf(d)) {
      const entry = hosts.get(host.docker_host) ?? { host, models: new Set<string>() };
      entry.models.add(d.model);
      hosts.set(host.docker_host, entry);
    }
  }
  for (const { host, models: wanted } of hosts.values()) {
    const docker = dockerClientFor(host);
    // A host that does not answer now is left alone; its engine places replicas elsewhere.
    const ours = await docker
      .listContainers({ all: true, filters: { label: ownContainers(deployment) } })
      .catch(() => []);
    for (const container of ours.filter((c) => !wanted.has(c.Labels[LABELS.engine] ?? ''))) {
      await docker
        .getContainer(container.Id)
        .remove({ force: true })
        .catch(() => {});
      log.info('engine container no definition asks for: removed', {
        engine: container.Labels[LABELS.engine],
        container: container.Id.slice(0, 12),
      });
    }
  }
}

/**
 * The model is in the catalog but nothing serves it right now (a replica is loading, or none is
 * defined): retryable, and says nothing about hosts.
 */
function noEngineReady(): never {
  throw new GatewayError('upstream_error', 'No engine is ready to serve this model right now. Retry later.', {
    status: 503,
    headers: { 'Retry-After': '5' },
  });
}
