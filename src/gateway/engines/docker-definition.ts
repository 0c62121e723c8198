import { z } from 'zod';
import { cacheSharing, schedulingPolicy } from './definition-fields.js';

/**
 * A Docker engine's definition in the engines file: where its replicas may run, how many, how it
 * scales.
 */

/** One Docker engine an engine's replicas may be placed on, with the GPUs it offers them. */
const dockerHost = z.object({
  /** unix:///var/run/docker.sock or tcp://host:2376. */
  docker_host: z.string().min(1),
  tls: z.object({ ca: z.string(), cert: z.string(), key: z.string() }).optional(),
  address: z.string().min(1).optional(),
  /** The GPU ids this host offers (nvidia-smi's indexes or UUIDs); each goes to at most one replica. */
  gpus: z.array(z.string().min(1)).default([]),
  /**
   * `nvidia`: placed GPUs are asked for as `DeviceRequests` with their ids. `none`: they are placed
   * and labelled but not asked for, for hosts without the NVIDIA runtime (tests, CPU boxes); the
   * container sees no GPU.
   */
  gpu_runtime: z.enum(['nvidia', 'none']).default('nvidia'),
});

/**
 * When and how fast an engine with `max_replicas` above `min_replicas` scales (see
 * docs/production.md).
 */
const autoscaling = z.object({
  /** Scale up when requests waiting per ready replica stay above this for `window_s`. */
  waiting_per_replica: z.number().min(0).default(2),
  window_s: z.number().positive().default(30),
  /** Scale down once nothing waited and the running requests fit in one replica fewer for this long. */
  idle_cooldown_s: z.number().positive().default(300),
  /**
   * Requests one replica runs at once (vLLM's --max-num-seqs): without scraped metrics, what a
   * gateway has in flight beyond it counts as waiting.
   */
  capacity_per_replica: z.number().int().positive().default(256),
  /** With no replica ready (min_replicas 0), how long a request waits for one to start before a 503. */
  cold_start_wait_s: z.number().min(0).default(60),
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
  /**
   * The model family's tool parser (hermes, llama3_json, mistral, ...): adds
   * `--enable-auto-tool-choice --tool-call-parser` to the command line.
   */
  tool_call_parser: z.string().min(1).optional(),
  /** The model family's reasoning parser (qwen3, deepseek_r1, ...): adds `--reasoning-parser`. */
  reasoning_parser: z.string().min(1).optional(),
  entrypoint: z.array(z.string()).min(1).default(['vllm', 'serve']),
  /** A GPU count, "all", or device ids such as ["0", "1"]. */
  gpus: z.union([z.number().int().positive(), z.literal('all'), z.array(z.string().min(1)).min(1)]).optional(),
  /** A fixed number of replicas: the same as min_replicas = max_replicas. */
  replicas: z.number().int().min(0).max(64).optional(),
  /** Autoscaling bounds; max_replicas above min_replicas turns it on. */
  min_replicas: z.number().int().min(0).max(64).optional(),
  max_replicas: z.number().int().min(0).max(64).optional(),
  autoscaling: autoscaling.prefault({}),
  /**
   * Several Docker engines with their GPUs: replicas are spread over them, one GPU set each.
   * Replaces docker_host, tls and address.
   */
  hosts: z.array(dockerHost).min(1).optional(),
  env: z.record(z.string(), z.string()).default({}),
  /**
   * Names of the gateway's environment variables passed to the container (e.g. HF_TOKEN), so
   * secrets stay out of this file.
   */
  env_from: z.array(z.string().min(1)).default([]),
  /** Host folder or volume mounted as the Hugging Face cache (/root/.cache/huggingface). */
  hf_cache: z.string().min(1).optional(),
  /** Shared memory for PyTorch: the host's IPC namespace (vLLM's advice), or a size such as "16g". */
  ipc_host: z.boolean().default(true),
  shm_size: z
    .string()
    .regex(/^\d+[kmg]?$/i, 'shm_size is a size such as 16g')
    .optional(),
  /**
   * "host": a port per replica (port + replica index) on the engine host; else a Docker network
   * where replicas are reached by name.
   */
  network: z.string().min(1).default('host'),
  port: z.number().int().min(1).max(65535).default(8000),
  /** The Docker engine: unix:///var/run/docker.sock (default) or tcp://host:2376. */
  docker_host: z.string().min(1).default('unix:///var/run/docker.sock'),
  /** TLS client files for a tcp:// engine. */
  tls: z.object({ ca: z.string(), cert: z.string(), key: z.string() }).optional(),
  /**
   * The address replicas are reached at with host networking; default 127.0.0.1 for a local engine,
   * the tcp:// host otherwise.
   */
  address: z.string().min(1).optional(),
  pull: z.enum(['missing', 'never']).default('missing'),
  /**
   * How long a replica may take to answer /health 200 (vLLM loads models for minutes) before it is
   * replaced.
   */
  startup_timeout_s: z.number().int().positive().default(1800),
  cache_sharing: cacheSharing,
  /**
   * `priority` adds `--scheduling-policy priority` to vLLM's command line, and sends each request's
   * band as its priority.
   */
  scheduling_policy: schedulingPolicy,
});

/**
 * `replicas` alone, `min_replicas`/`max_replicas`, or neither (1); with `hosts`, `gpus` is the
 * count each replica gets.
 */
export const dockerEngine = dockerDefinition.superRefine((d, context) => {
  const bounded = d.min_replicas !== undefined || d.max_replicas !== undefined;
  if (bounded && d.replicas !== undefined)
    context.addIssue({
      code: 'custom',
      path: ['replicas'],
      message: 'give replicas, or min_replicas and max_replicas, not both',
    });
  if ((d.min_replicas ?? 0) > (d.max_replicas ?? 64))
    context.addIssue({ code: 'custom', path: ['max_replicas'], message: 'max_replicas is below min_replicas' });
  // One daemon listed twice would list each container twice, and see each replica as its own
  // duplicate.
  if (d.hosts && new Set(d.hosts.map((h) => h.docker_host)).size < d.hosts.length)
    context.addIssue({ code: 'custom', path: ['hosts'], message: 'each docker_host is listed once' });
  if (d.hosts && d.gpus !== undefined && typeof d.gpus !== 'number')
    context.addIssue({
      code: 'custom',
      path: ['gpus'],
      message: 'with hosts, gpus is the number of GPUs each replica gets',
    });
});

export type DockerDefinition = z.infer<typeof dockerDefinition>;
export type DockerHostDefinition = z.infer<typeof dockerHost>;

/**
 * An engine's replica bounds: `replicas` is a fixed count (min = max), and
 * an engine that gives neither runs one replica.
 *
 * @example
 * replicaBounds({ min_replicas: 0, max_replicas: 4 }); // { min: 0, max: 4 }
 */
export function replicaBounds(d: Pick<DockerDefinition, 'replicas' | 'min_replicas' | 'max_replicas'>): {
  min: number;
  max: number;
} {
  if (d.replicas !== undefined) return { min: d.replicas, max: d.replicas };
  const min = d.min_replicas ?? Math.min(1, d.max_replicas ?? 1);
  return { min, max: Math.max(min, d.max_replicas ?? Math.max(min, 1)) };
}
