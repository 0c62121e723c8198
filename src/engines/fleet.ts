import { GatewayError } from '../http/errors.js';
import type { EngineDefinition, SimulatorDefinition, StaticDefinition } from './definitions.js';
import { startSimulatorEngines, type SimulatorEngineOptions } from './simulator.js';
import { createStaticEngine } from './static.js';
import type { Engine, UpstreamTarget } from './types.js';

/**
 * All engines, by catalog model id. The request path asks it for a target and
 * knows nothing of the engine's kind.
 *
 * @example
 * const fleet = await startFleet(definitions, { env: process.env, simulator: { ttftMs: 0, itlMs: 0 } });
 * const target = fleet.acquire('sim-chat');
 */
export interface Fleet {
  acquire(modelId: string): UpstreamTarget;
  engines(): Engine[];
  /** The built-in simulator's address, when one runs (for logs and tests). */
  simulatorUrl: string | null;
  close(): Promise<void>;
}

export interface FleetOptions {
  env: Record<string, string | undefined>;
  simulator: SimulatorEngineOptions;
}

export async function startFleet(definitions: EngineDefinition[], options: FleetOptions): Promise<Fleet> {
  const simulated = definitions.filter((d): d is SimulatorDefinition => d.kind === 'simulator');
  const fixed = definitions.filter((d): d is StaticDefinition => d.kind === 'static');
  const { engines: simulatorEngines, simulator } = await startSimulatorEngines(simulated, options.simulator);
  const all = [...simulatorEngines, ...fixed.map((d) => createStaticEngine(d, options.env))];
  const byModel = new Map(all.map((engine) => [engine.modelId, engine]));
  return {
    acquire(modelId) {
      const target = byModel.get(modelId)?.acquire();
      if (!target) {
        // The model is in the catalog but nothing serves it (yet): retryable, and says nothing about hosts.
        throw new GatewayError('upstream_error', 'No engine is serving this model right now. Retry later.', {
          status: 503,
          headers: { 'Retry-After': '5' },
        });
      }
      return target;
    },
    engines: () => all,
    simulatorUrl: simulator?.url ?? null,
    async close() {
      await Promise.all(all.map((engine) => engine.close()));
      await simulator?.close();
    },
  };
}
