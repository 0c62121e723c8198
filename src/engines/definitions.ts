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

const dockerDefinition = z.object({
  kind: z.literal('docker'),
  model: z.string().min(1),
  /** The vLLM image (or one that takes vLLM's command line, like the simulator's test image). */
  image: z.string().min(1),
  /** The model's repository, vLLM's positional argument (`vllm serve Qwen/Qwen2.5-7B-Instruct`). */
  hf_repo: z.string().min(1),
  served_model_name: z.string().min(1).optional(),
  /** Extra vLLM arguments, e.g. ["--max-model-len", "32768"]. */
  args: z.array(z.string()).default([]),
  entrypoint: z.array(z.string()).min(1).default(['vllm', 'serve']),
  /** A GPU count, "all", or device ids such as ["0", "1"]. */
  gpus: z.union([z.number().int().positive(), z.literal('all'), z.array(z.string().min(1)).min(1)]).optional(),
  replicas: z.number().int().min(0).max(64).default(1),
  env: z.record(z.string(), z.string()).default({}),
  /** Names of the gateway's environment variables passed to the container (e.g. HF_TOKEN), so secrets stay out of this file. */
  env_from: z.array(z.string().min(1)).default([]),
  /** Host folder or volume mounted as the Hugging Face cache (/root/.cache/huggingface). */
  hf_cache: z.string().min(1).optional(),
  /** Shared memory for PyTorch: the host's IPC namespace (vLLM's advice), or a size such as "16g". */
  ipc_host: z.boolean().default(true),
  shm_size: z.string().regex(/^\d+[kmg]?$/i, 'shm_size is a size such as 16g').optional(),
  /** "host": a port per replica (port + replica index) on the engine host; else a Docker network where replicas are reached by name. */
  network: z.string().min(1).default('host'),
  port: z.number().int().min(1).max(65535).default(8000),
  /** The Docker engine: unix:///var/run/docker.sock (default) or tcp://host:2376. */
  docker_host: z.string().min(1).default('unix:///var/run/docker.sock'),
  /** TLS client files for a tcp:// engine. */
  tls: z.object({ ca: z.string(), cert: z.string(), key: z.string() }).optional(),
  /** The address replicas are reached at with host networking; default 127.0.0.1 for a local engine, the tcp:// host otherwise. */
  address: z.string().min(1).optional(),
  pull: z.enum(['missing', 'never']).default('missing'),
  /** How long a replica may take to answer /health 200 (vLLM loads models for minutes) before it is replaced. */
  startup_timeout_s: z.number().int().positive().default(1800),
});

const definitionsFile = z.object({
  engines: z.array(z.discriminatedUnion('kind', [simulatorDefinition, staticDefinition, dockerDefinition])),
});

export type SimulatorDefinition = z.infer<typeof simulatorDefinition>;
export type StaticDefinition = z.infer<typeof staticDefinition>;
export type DockerDefinition = z.infer<typeof dockerDefinition>;
export type EngineDefinition = SimulatorDefinition | StaticDefinition | DockerDefinition;

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
