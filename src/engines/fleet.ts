import type { Config } from '../config.js';
import { GatewayError } from '../http/errors.js';
import type { Logger } from '../http/log.js';
import type { DockerDefinition, EngineDefinition, SimulatorDefinition, StaticDefinition } from './definitions.js';
import { dockerClientFor } from './docker/client.js';
import { removeEngineContainers, startDockerEngine } from './docker/engine.js';
import { LABELS, ownContainers } from './docker/spec.js';
import { startSimulatorEngines } from './simulator.js';
import { createStaticEngine } from './static.js';
import type { Engine, EngineStatus, UpstreamTarget } from './types.js';

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
  /** A target for the model, not among `exclude` (replica ids); 503 with Retry-After when none is ready. */
  acquire(modelId: string, exclude?: ReadonlySet<string>): UpstreamTarget;
  engines(): Engine[];
  status(): EngineStatus[];
  /** The built-in simulator's address, when one runs (for logs and tests). */
  simulatorUrl: string | null;
  close(): Promise<void>;
}

export interface FleetOptions {
  env: Record<string, string | undefined>;
  config: Pick<Config, 'simulator' | 'engines' | 'deployment'>;
  log: Logger;
}

export async function startFleet(definitions: EngineDefinition[], options: FleetOptions): Promise<Fleet> {
  const simulated = definitions.filter((d): d is SimulatorDefinition => d.kind === 'simulator');
  const fixed = definitions.filter((d): d is StaticDefinition => d.kind === 'static');
  const dockerized = definitions.filter((d): d is DockerDefinition => d.kind === 'docker');
  const { engines: simulatorEngines, simulator } = await startSimulatorEngines(simulated, options.config.simulator);
  const deployment = options.config.deployment;
  await removeUndefinedContainers(dockerized, deployment, options.log);
  const dockerEngines = await Promise.all(
    dockerized.map((d) => startDockerEngine(d, { docker: dockerClientFor(d), log: options.log, env: options.env, pollMs: options.config.engines.pollMs, deployment })),
  );
  const all = [...simulatorEngines, ...fixed.map((d) => createStaticEngine(d, options.env)), ...dockerEngines];
  const byModel = new Map(all.map((engine) => [engine.modelId, engine]));
  return {
    acquire(modelId, exclude) {
      const target = byModel.get(modelId)?.acquire(exclude);
      if (!target) {
        // The model is in the catalog but nothing serves it right now (a replica is loading, or none is defined):
        // retryable, and says nothing about hosts.
        throw new GatewayError('upstream_error', 'No engine is ready to serve this model right now. Retry later.', {
          status: 503,
          headers: { 'Retry-After': '5' },
        });
      }
      return target;
    },
    engines: () => all,
    status: () => all.map((engine) => engine.status()),
    simulatorUrl: simulator?.url ?? null,
    async close() {
      await Promise.all(all.map((engine) => engine.close()));
      if (options.config.engines.onShutdown === 'stop') {
        await Promise.all(dockerized.map((d) => removeEngineContainers(dockerClientFor(d), d.model, deployment)));
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
async function removeUndefinedContainers(definitions: DockerDefinition[], deployment: string, log: Logger): Promise<void> {
  const hosts = new Map<string, DockerDefinition[]>();
  for (const d of definitions) hosts.set(d.docker_host, [...(hosts.get(d.docker_host) ?? []), d]);
  for (const [, onHost] of hosts) {
    const docker = dockerClientFor(onHost[0]!);
    const wanted = new Set(onHost.map((d) => d.model));
    const ours = await docker.listContainers({ all: true, filters: { label: ownContainers(deployment) } });
    for (const container of ours.filter((c) => !wanted.has(c.Labels[LABELS.engine] ?? ''))) {
      await docker.getContainer(container.Id).remove({ force: true }).catch(() => {});
      log.info('engine container no definition asks for: removed', { engine: container.Labels[LABELS.engine], container: container.Id.slice(0, 12) });
    }
  }
}
