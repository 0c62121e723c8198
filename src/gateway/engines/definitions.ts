import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ENGINE_KINDS } from './kinds.js';
import { dockerEngine } from './docker-definition.js';
import { cacheSharing, schedulingPolicy } from './definition-fields.js';
import type { DockerDefinition } from './docker-definition.js';

// Engine definitions, the file operators edit (`engines/engines.json`, or the
// path in TOLLGATE_ENGINES_FILE). One entry per catalog model.

const simulatorDefinition = z.object({
  kind: z.literal('simulator'),
  model: z.string().min(1),
  served_model_name: z.string().min(1).optional(),
  /** What the simulated engine runs, like vLLM's `--runner pooling` for embeddings. */
  task: z.enum(['chat', 'embedding']).default('chat'),
  /**
   * Emits reasoning before content, as vLLM does with a `--reasoning-parser` (`reasoning_parser`
   * says the same).
   */
  reasoning: z.boolean().default(false),
  reasoning_parser: z.string().min(1).optional(),
  /**
   * vLLM's `--tool-call-parser` with `--enable-auto-tool-choice`: `tool_choice` "auto" may call
   * tools; null refuses "auto" with tools, as vLLM without the flags.
   */
  tool_call_parser: z.string().min(1).nullable().default('hermes'),
  /**
   * Scripted mode: a file of turns the model answers with (docs/tool-calling.md), relative to this
   * file's folder.
   */
  script: z.string().min(1).optional(),
  max_model_len: z.number().int().positive().default(8192),
  cache_sharing: cacheSharing,
});

const staticFields = z.object({
  kind: z.literal('static'),
  model: z.string().min(1),
  served_model_name: z.string().min(1).optional(),
  /** One server, always offered (no health checks, no routing). */
  url: z.string().url().optional(),
  /** Several servers: replicas with health checks, metrics, routing and failover. */
  urls: z.array(z.string().url()).min(1).max(256).optional(),
  /**
   * A name whose addresses are the replicas (a Kubernetes headless Service), resolved again every
   * TOLLGATE_ENGINE_DNS_REFRESH_MS.
   */
  dns: z
    .object({
      name: z
        .string()
        .regex(/^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$/, 'dns.name is a host name such as vllm.ml.svc.cluster.local'),
      port: z.number().int().min(1).max(65535).default(8000),
      scheme: z.enum(['http', 'https']).default('http'),
    })
    .optional(),
  /** Name of an environment variable holding the engine's API key (vLLM's --api-key). */
  api_key_env: z.string().min(1).optional(),
  /**
   * Which server it is (docs/engines.md): vllm, llamacpp or openai-compatible; absent: found out
   * from each server at start.
   */
  engine: z.enum(ENGINE_KINDS).optional(),
  /**
   * Requests one server runs at once (vLLM's --max-num-seqs, llama.cpp's --parallel): past it,
   * requests wait in the gateway's fair queue (docs/fair-sharing.md). Absent: learnt when a
   * server's metrics first show requests waiting.
   */
  max_num_seqs: z.number().int().min(1).max(100_000).optional(),
  cache_sharing: cacheSharing,
  /**
   * `priority` only for a vLLM started with `--scheduling-policy priority` (vLLM refuses a priority
   * otherwise).
   */
  scheduling_policy: schedulingPolicy,
});
const staticDefinition = staticFields.superRefine((d, context) => {
  const given = [d.url, d.urls, d.dns].filter((where) => where !== undefined).length;
  if (given !== 1) context.addIssue({ code: 'custom', path: ['url'], message: 'give one of url, urls or dns' });
});

const definitionsFile = z.object({
  engines: z.array(z.discriminatedUnion('kind', [simulatorDefinition, staticDefinition, dockerEngine])),
});

export type SimulatorDefinition = z.infer<typeof simulatorDefinition>;
export type StaticDefinition = z.infer<typeof staticFields>;

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
  const definitions = parseEngineDefinitions(text, file);
  // A script is named relative to the file that names it, wherever the gateway was started.
  for (const definition of definitions)
    if (definition.kind === 'simulator' && definition.script)
      definition.script = resolve(dirname(file), definition.script);
  return definitions;
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
    if (seen.has(definition.model))
      throw new EngineDefinitionError(`${source}: model ${definition.model} has more than one engine.`);
    seen.add(definition.model);
  }
  return parsed.data.engines;
}
