import { readFile } from 'node:fs/promises';
import { z } from 'zod';

/**
 * Engine definitions, the file operators edit (`engines/engines.json`, or the
 * path in TOLLGATE_ENGINES_FILE). One entry per catalog model.
 */
const simulatorDefinition = z.object({
  kind: z.literal('simulator'),
  model: z.string().min(1),
  served_model_name: z.string().min(1).optional(),
  /** What the simulated engine runs, like vLLM's `--runner pooling` for embeddings. */
  task: z.enum(['chat', 'embedding']).default('chat'),
  reasoning: z.boolean().default(false),
  max_model_len: z.number().int().positive().default(8192),
});

const staticDefinition = z.object({
  kind: z.literal('static'),
  model: z.string().min(1),
  served_model_name: z.string().min(1).optional(),
  url: z.string().url(),
  /** Name of an environment variable holding the engine's API key (vLLM's --api-key). */
  api_key_env: z.string().min(1).optional(),
});

const definitionsFile = z.object({
  engines: z.array(z.discriminatedUnion('kind', [simulatorDefinition, staticDefinition])),
});

export type SimulatorDefinition = z.infer<typeof simulatorDefinition>;
export type StaticDefinition = z.infer<typeof staticDefinition>;
export type EngineDefinition = SimulatorDefinition | StaticDefinition;

export class EngineDefinitionError extends Error {
  override name = 'EngineDefinitionError';
}

/**
 * Reads and validates the definitions file. A missing file means no engines.
 *
 * @example
 * const definitions = await readEngineDefinitions('engines/engines.json');
 */
export async function readEngineDefinitions(file: string): Promise<EngineDefinition[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return parseEngineDefinitions(text, file);
}

export function parseEngineDefinitions(text: string, source = 'engine definitions'): EngineDefinition[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new EngineDefinitionError(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = definitionsFile.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new EngineDefinitionError(`${source} is invalid:\n${lines.join('\n')}`);
  }
  const seen = new Set<string>();
  for (const definition of parsed.data.engines) {
    if (seen.has(definition.model)) throw new EngineDefinitionError(`${source}: model ${definition.model} has more than one engine.`);
    seen.add(definition.model);
  }
  return parsed.data.engines;
}
