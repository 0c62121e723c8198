import type { RunningSimulator, SimModel } from '../../sim/index.js';
import { startSimulator } from '../../sim/index.js';
import { tenancyOf } from './definition-fields.js';
import type { SimulatorDefinition } from './definitions.js';
import { singleTargetEngine } from './single.js';
import type { Engine } from './types.js';

export interface SimulatorEngineOptions {
  ttftMs: number;
  itlMs: number;
}

/**
 * The built-in simulator as engines: one simulator server on a loopback port
 * serves every simulator definition, and the request path reaches it over
 * HTTP exactly as it reaches a real vLLM.
 *
 * @example
 * const { engines, close } = await startSimulatorEngines(definitions, { ttftMs: 0, itlMs: 0 });
 */
export async function startSimulatorEngines(
  definitions: SimulatorDefinition[],
  options: SimulatorEngineOptions,
): Promise<{ engines: Engine[]; simulator: RunningSimulator | null }> {
  if (definitions.length === 0) return { engines: [], simulator: null };
  const models: SimModel[] = definitions.map((d) => ({
    name: d.served_model_name ?? d.model,
    task: d.task,
    reasoning: d.reasoning || d.reasoning_parser !== undefined,
    maxModelLen: d.max_model_len,
    toolCallParser: d.tool_call_parser,
    ...(d.script === undefined ? {} : { script: d.script }),
  }));
  const simulator = await startSimulator({ models, ttftMs: options.ttftMs, itlMs: options.itlMs });
  const engines = definitions.map((d) =>
    singleTargetEngine({
      kind: 'simulator',
      modelId: d.model,
      baseUrl: `${simulator.url}/v1`,
      servedModelName: d.served_model_name ?? d.model,
      tenancy: tenancyOf(d),
    }),
  );
  return { engines, simulator };
}
