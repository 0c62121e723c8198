import { parseArgs } from 'node:util';
import type { SimModel, SimulatorOptions } from './types.js';

/** A bad flag or environment value; the CLI prints it and exits 2. */
export class SimCliError extends Error {
  override name = 'SimCliError';
}

/** What `--help` prints. */
export const SIM_USAGE = `Usage: tsx src/sim/main.ts [options]
       tsx src/sim/main.ts [MODEL_REPO] [--served-model-name NAME...] [vLLM flags]

A vLLM-compatible simulator (OpenAI chat completions and embeddings, no GPU).

Options (environment variable in brackets):
  --port N                 listen port, 0 = random (SIM_PORT, default 8000)
  --host HOST              listen address (SIM_HOST, default 127.0.0.1)
  --model NAME[:SUFFIX]    served model, repeatable; suffix :chat, :embedding or :reasoning
                           (SIM_MODELS, comma-separated; default sim-chat, sim-embed:embedding)
  --ttft-ms N              time to first token (SIM_TTFT_MS, default 0)
  --itl-ms N               inter-token latency (SIM_ITL_MS, default 0)
  --failure-rate P         probability 0..1 of a random 500 (SIM_FAILURE_RATE, default 0)
  --startup-delay-ms N     /health and /v1 answer 503 this long (SIM_STARTUP_DELAY_MS, default 0)
  --max-model-len N        context length of every model (SIM_MAX_MODEL_LEN, default 4096)
  --default-max-tokens N   completion length without max_tokens (SIM_DEFAULT_MAX_TOKENS, default 16)
  -h, --help               show this help

vLLM's command line (\`vllm serve\`), so the simulator can stand in for it:
  MODEL_REPO               the model's repository; the served name unless
                           --served-model-name is given (replaces --model/SIM_MODELS)
  --served-model-name N..  one or more served names for the model
  --runner pooling, --task embed|embedding, --convert embed
                           serve an embedding model (default: chat)
  --reasoning-parser P     chat models emit reasoning text before content
  Other vLLM flags (--gpu-memory-utilization, --tensor-parallel-size, --dtype,
  --enforce-eager, --enable-prefix-caching, ...) are accepted and ignored.
`;

/** The parsed command line: options for startSimulator, or a request for help. */
export type SimCliResult =
  | { help: true }
  | {
      help: false;
      options: SimulatorOptions;
      /** vLLM flags that were accepted and ignored, as given; absent when none. */
      ignored?: string[];
    };

const DEFAULT_MODELS = ['sim-chat', 'sim-embed:embedding'];

/** The simulator's own flags that take a value. */
const SIM_VALUE_FLAGS = new Set([
  'port',
  'host',
  'model',
  'ttft-ms',
  'itl-ms',
  'failure-rate',
  'startup-delay-ms',
  'max-model-len',
  'default-max-tokens',
  // vLLM flags the simulator reads (see vllmTask and reasoning below).
  'runner',
  'task',
  'convert',
  'reasoning-parser',
]);

/** vLLM flags that take exactly one value, which the simulator ignores. */
export const VLLM_VALUE_FLAGS: ReadonlySet<string> = new Set([
  // frontend
  'uds', 'uvicorn-log-level', 'allowed-origins', 'allowed-methods', 'allowed-headers', 'chat-template',
  'chat-template-content-format', 'response-role', 'ssl-keyfile', 'ssl-certfile', 'ssl-ca-certs', 'ssl-cert-reqs',
  'root-path', 'tool-call-parser', 'tool-parser-plugin', 'tool-server', 'log-config-file', 'max-log-len',
  'h11-max-incomplete-event-size', 'h11-max-header-count', 'api-server-count', 'config', 'default-chat-template-kwargs',
  // model
  'tokenizer', 'tokenizer-mode', 'dtype', 'seed', 'hf-config-path', 'allowed-local-media-path', 'allowed-media-domains',
  'revision', 'code-revision', 'rope-scaling', 'rope-theta', 'tokenizer-revision', 'quantization', 'max-logprobs',
  'logprobs-mode', 'config-format', 'hf-overrides', 'pooler-config', 'override-pooler-config', 'logits-processor-pattern',
  'generation-config', 'override-generation-config', 'model-impl', 'override-attention-dtype', 'io-processor-plugin',
  'max-seq-len-to-capture', 'override-neuron-config',
  // load
  'load-format', 'download-dir', 'safetensors-load-strategy', 'model-loader-extra-config', 'pt-load-map-location',
  'guided-decoding-backend', 'structured-outputs-config',
  // parallel
  'distributed-executor-backend', 'pipeline-parallel-size', 'tensor-parallel-size', 'decode-context-parallel-size',
  'data-parallel-size', 'data-parallel-rank', 'data-parallel-start-rank', 'data-parallel-size-local',
  'data-parallel-address', 'data-parallel-rpc-port', 'data-parallel-backend', 'eplb-config', 'num-redundant-experts',
  'expert-placement-strategy', 'max-parallel-loading-workers', 'worker-cls', 'worker-extension-cls',
  'dbo-decode-token-threshold', 'dbo-prefill-token-threshold', 'all2all-backend',
  // cache
  'block-size', 'gpu-memory-utilization', 'kv-cache-memory', 'kv-cache-memory-bytes', 'swap-space', 'kv-cache-dtype',
  'num-gpu-blocks-override', 'prefix-caching-hash-algo', 'cpu-offload-gb', 'mamba-cache-dtype', 'mamba-ssm-cache-dtype',
  // multimodal
  'limit-mm-per-prompt', 'media-io-kwargs', 'mm-processor-kwargs', 'mm-processor-cache-gb', 'mm-processor-cache-type',
  'mm-encoder-tp-mode', 'video-pruning-rate',
  // LoRA
  'max-loras', 'max-lora-rank', 'lora-extra-vocab-size', 'lora-dtype', 'max-cpu-loras', 'default-mm-loras',
  // observability, scheduler, speculative decoding, KV transfer, compilation
  'show-hidden-metrics-for-version', 'otlp-traces-endpoint', 'collect-detailed-traces', 'max-num-batched-tokens',
  'max-num-seqs', 'max-num-partial-prefills', 'max-long-partial-prefills', 'long-prefill-token-threshold',
  'num-lookahead-slots', 'scheduling-policy', 'scheduler-cls', 'speculative-config', 'kv-transfer-config',
  'kv-events-config', 'compilation-config', 'additional-config',
]);

/** vLLM flags that take one or more values (argparse nargs='+'), ignored. */
export const VLLM_LIST_FLAGS: ReadonlySet<string> = new Set([
  'api-key', 'lora-modules', 'middleware', 'cuda-graph-sizes', 'ignore-patterns', 'logits-processors',
]);

/** vLLM flags without a value (`--no-X` accepted too), ignored. */
export const VLLM_BOOLEAN_FLAGS: ReadonlySet<string> = new Set([
  'trust-remote-code', 'enforce-eager', 'enable-prefix-caching', 'enable-chunked-prefill', 'disable-log-stats',
  'disable-log-requests', 'enable-log-requests', 'enable-log-outputs', 'disable-uvicorn-access-log', 'disable-fastapi-docs',
  'enable-auto-tool-choice', 'exclude-tools-when-tool-choice-none', 'enable-prompt-tokens-details',
  'enable-server-load-tracking', 'enable-force-include-usage', 'enable-request-id-headers', 'enable-ssl-refresh',
  'return-tokens-as-token-ids', 'disable-frontend-multiprocessing', 'trust-request-chat-template',
  'enable-tokenizer-info-endpoint', 'disable-sliding-window', 'disable-cascade-attn', 'skip-tokenizer-init',
  'enable-prompt-embeds', 'enable-sleep-mode', 'use-tqdm-on-load', 'data-parallel-hybrid-lb', 'data-parallel-external-lb',
  'enable-expert-parallel', 'enable-eplb', 'ray-workers-use-nsight', 'disable-custom-all-reduce', 'enable-dbo',
  'calculate-kv-scales', 'kv-sharing-fast-prefill', 'disable-mm-preprocessor-cache', 'interleave-mm-strings',
  'skip-mm-profiling', 'enable-lora', 'enable-lora-bias', 'fully-sharded-loras', 'disable-chunked-mm-input',
  'disable-hybrid-kv-cache-manager', 'async-scheduling', 'headless', 'enable-reasoning',
]);

/** vLLM's short spellings of value flags (`-tp 2`), ignored. */
const VLLM_SHORT_VALUE_FLAGS = new Set(['-tp', '-pp', '-dcp', '-dp', '-dpn', '-dpr', '-dpl', '-dpa', '-dpp', '-dpb', '-q', '-O']);

interface SplitArgs {
  /** What node's parseArgs checks: the simulator's own flags, as `--name=value` or booleans. */
  rest: string[];
  positionals: string[];
  servedNames?: string[];
  ignored: string[];
}

/**
 * Separates vLLM's command line from the simulator's: takes out the
 * positional model repository, --served-model-name's list, and every known
 * vLLM flag the simulator ignores (with its value). `--max_model_len` is read
 * as `--max-model-len`, as vLLM does. Unknown flags stay in `rest`, where
 * parseArgs rejects them.
 */
function splitVllmArgs(argv: string[]): SplitArgs {
  const out: SplitArgs = { rest: [], positionals: [], ignored: [] };
  const takeValue = (flag: string, i: number): string => {
    const value = argv[i];
    if (value === undefined) throw new SimCliError(`${flag} needs a value`);
    return value;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = (eq < 0 ? arg.slice(2) : arg.slice(2, eq)).replaceAll('_', '-');
      const inline = eq < 0 ? undefined : arg.slice(eq + 1);
      const flag = `--${name}`;
      if (name === 'served-model-name') {
        const names = inline !== undefined ? [inline] : [];
        while (inline === undefined && i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-')) names.push(argv[++i] as string);
        if (names.length === 0) throw new SimCliError(`${flag} needs at least one name`);
        out.servedNames = [...(out.servedNames ?? []), ...names];
      } else if (SIM_VALUE_FLAGS.has(name)) {
        out.rest.push(`${flag}=${inline ?? takeValue(flag, ++i)}`);
      } else if (VLLM_VALUE_FLAGS.has(name)) {
        out.ignored.push(flag, inline ?? takeValue(flag, ++i));
      } else if (VLLM_LIST_FLAGS.has(name)) {
        const list = inline !== undefined ? [inline] : [takeValue(flag, ++i)];
        while (inline === undefined && i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-')) list.push(argv[++i] as string);
        // Keys are reported as *** (main.ts logs what it ignores).
        out.ignored.push(flag, ...(name === 'api-key' ? list.map(() => '***') : list));
      } else if (name === 'hf-token') {
        // nargs='?': a token, or alone (use the stored login).
        out.ignored.push(flag);
        if (inline === undefined && i + 1 < argv.length && (argv[i + 1] as string).startsWith('hf_')) i++;
      } else if (VLLM_BOOLEAN_FLAGS.has(name) || (name.startsWith('no-') && VLLM_BOOLEAN_FLAGS.has(name.slice(3)))) {
        out.ignored.push(inline === undefined ? flag : `${flag}=${inline}`);
      } else {
        out.rest.push(eq < 0 ? flag : `${flag}=${inline}`);
      }
    } else if (VLLM_SHORT_VALUE_FLAGS.has(arg)) {
      out.ignored.push(arg, takeValue(arg, ++i));
    } else if (/^-O\d$/.test(arg) || /^-O\./.test(arg)) {
      out.ignored.push(arg);
    } else if (arg.startsWith('-') && arg !== '-') {
      out.rest.push(arg);
    } else {
      out.positionals.push(arg);
    }
  }
  return out;
}

/**
 * Reads simulator options from flags, falling back to SIM_* environment
 * variables. Takes vLLM's `vllm serve` command line too: a positional model
 * repository, --served-model-name, --runner/--task, and vLLM flags the
 * simulator ignores. Throws SimCliError on any invalid value or unknown flag.
 *
 * @example
 * parseSimArgs(['--port', '0', '--model', 'qwen:reasoning'], {});
 * parseSimArgs(['BAAI/bge-small-en-v1.5', '--served-model-name', 'bge', '--runner', 'pooling', '--gpu-memory-utilization', '0.2'], {});
 */
export function parseSimArgs(argv: string[], env: Record<string, string | undefined>): SimCliResult {
  const split = splitVllmArgs(argv);
  let values;
  try {
    ({ values } = parseArgs({
      args: split.rest,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        model: { type: 'string', multiple: true },
        'ttft-ms': { type: 'string' },
        'itl-ms': { type: 'string' },
        'failure-rate': { type: 'string' },
        'startup-delay-ms': { type: 'string' },
        'max-model-len': { type: 'string' },
        'default-max-tokens': { type: 'string' },
        runner: { type: 'string' },
        task: { type: 'string' },
        convert: { type: 'string' },
        'reasoning-parser': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new SimCliError((error as Error).message);
  }
  if (values.help) return { help: true };

  type ValueFlag = Exclude<keyof typeof values, 'help' | 'model'>;
  const pick = (flag: ValueFlag, name: string): [string, string] | null => {
    const value = values[flag];
    if (typeof value === 'string') return [`--${flag}`, value];
    const fromEnv = env[name];
    return fromEnv === undefined || fromEnv === '' ? null : [name, fromEnv];
  };
  const number = (flag: ValueFlag, name: string, check: (n: number) => boolean, expected: string) => {
    const found = pick(flag, name);
    if (!found) return undefined;
    const [source, text] = found;
    const value = Number(text);
    if (text.trim() === '' || !check(value)) throw new SimCliError(`${source} must be ${expected}, got "${text}"`);
    return value;
  };
  const isMs = (n: number): boolean => Number.isFinite(n) && n >= 0;
  const isPositiveInt = (n: number): boolean => Number.isInteger(n) && n >= 1;

  const maxModelLen = number('max-model-len', 'SIM_MAX_MODEL_LEN', isPositiveInt, 'an integer >= 1');
  const task = vllmTask(values.runner, values.task, values.convert);
  const reasoning = values['reasoning-parser'] !== undefined && values['reasoning-parser'] !== '';
  const models = resolveModels(split, values.model, env, maxModelLen, task, reasoning);
  const names = new Set<string>();
  for (const model of models) {
    if (names.has(model.name)) throw new SimCliError(`model "${model.name}" is given twice`);
    names.add(model.name);
  }

  const options: SimulatorOptions = {
    models,
    host: pick('host', 'SIM_HOST')?.[1] ?? '127.0.0.1',
    port: number('port', 'SIM_PORT', (n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'an integer 0..65535') ?? 8000,
  };
  const ttftMs = number('ttft-ms', 'SIM_TTFT_MS', isMs, 'a number >= 0');
  const itlMs = number('itl-ms', 'SIM_ITL_MS', isMs, 'a number >= 0');
  const failureRate = number('failure-rate', 'SIM_FAILURE_RATE', (n) => n >= 0 && n <= 1, 'a number within 0..1');
  const startupDelayMs = number('startup-delay-ms', 'SIM_STARTUP_DELAY_MS', isMs, 'a number >= 0');
  const defaultMaxTokens = number('default-max-tokens', 'SIM_DEFAULT_MAX_TOKENS', isPositiveInt, 'an integer >= 1');
  if (ttftMs !== undefined) options.ttftMs = ttftMs;
  if (itlMs !== undefined) options.itlMs = itlMs;
  if (failureRate !== undefined) options.failureRate = failureRate;
  if (startupDelayMs !== undefined) options.startupDelayMs = startupDelayMs;
  if (defaultMaxTokens !== undefined) options.defaultMaxTokens = defaultMaxTokens;
  return split.ignored.length > 0 ? { help: false, options, ignored: split.ignored } : { help: false, options };
}

/**
 * The served models. vLLM's form (a positional repository and/or
 * --served-model-name) serves one model under each served name, named
 * verbatim; otherwise --model specs, SIM_MODELS or the defaults. The vLLM
 * task applies to every model without an explicit :suffix.
 */
function resolveModels(
  split: SplitArgs,
  specs: string[] | undefined,
  env: Record<string, string | undefined>,
  maxModelLen: number | undefined,
  task: SimModel['task'] | undefined,
  reasoning: boolean,
): SimModel[] {
  if (split.positionals.length > 1) throw new SimCliError(`unexpected argument "${split.positionals[1]}" (one model repository at most)`);
  let repo = split.positionals[0];
  if (repo !== undefined || split.servedNames) {
    if (specs) {
      // vLLM's older spelling `--model REPO --served-model-name NAME`.
      if (repo !== undefined || specs.length > 1) {
        throw new SimCliError('--model cannot be combined with a positional model repository; use --served-model-name');
      }
      repo = specs[0];
    }
    const names = split.servedNames ?? [repo as string];
    return names.map((name) => {
      if (name.trim() === '') throw new SimCliError('--served-model-name: empty model name');
      const model: SimModel = { name, task: task ?? 'chat' };
      if (reasoning && model.task === 'chat') model.reasoning = true;
      if (maxModelLen !== undefined) model.maxModelLen = maxModelLen;
      return model;
    });
  }
  const list = specs ?? env.SIM_MODELS?.split(',').map((s) => s.trim()).filter(Boolean) ?? DEFAULT_MODELS;
  return list.map((spec) => {
    const model = parseModelSpec(spec, maxModelLen, task);
    if (reasoning && model.task === 'chat') model.reasoning = true;
    return model;
  });
}

/**
 * The task vLLM's --runner, --task (before 0.10) and --convert select:
 * `pooling`, `embed`/`embedding` serve embeddings, `generate` chat, `auto`
 * leaves the choice to the others. Undefined when none is given.
 */
function vllmTask(runner?: string, task?: string, convert?: string): SimModel['task'] | undefined {
  const choices: Array<[string, string | undefined, Record<string, SimModel['task'] | null>]> = [
    ['--runner', runner, { auto: null, generate: 'chat', pooling: 'embedding' }],
    ['--task', task, { auto: null, generate: 'chat', embed: 'embedding', embedding: 'embedding' }],
    ['--convert', convert, { auto: null, none: null, embed: 'embedding' }],
  ];
  let chosen: SimModel['task'] | undefined;
  for (const [flag, value, map] of choices) {
    if (value === undefined) continue;
    if (!Object.hasOwn(map, value)) {
      throw new SimCliError(`${flag} ${value} is not supported by the simulator (expected ${Object.keys(map).join(', ')})`);
    }
    const picked = map[value];
    if (!picked) continue;
    if (chosen && chosen !== picked) throw new SimCliError(`${flag} ${value} contradicts an earlier --runner/--task/--convert`);
    chosen = picked;
  }
  return chosen;
}

/**
 * `name`, `name:chat`, `name:embedding` or `name:reasoning`. Other colons stay
 * in the name (`qwen:0.5b` is a model called "qwen:0.5b", of `defaultTask`,
 * chat unless given).
 *
 * @example
 * parseModelSpec('bge:embedding'); // { name: 'bge', task: 'embedding' }
 */
export function parseModelSpec(spec: string, maxModelLen?: number, defaultTask: SimModel['task'] = 'chat'): SimModel {
  const colon = spec.lastIndexOf(':');
  const suffix = colon < 0 ? '' : spec.slice(colon + 1);
  const known = suffix === 'chat' || suffix === 'embedding' || suffix === 'reasoning';
  const name = known ? spec.slice(0, colon) : spec;
  if (name.trim() === '') throw new SimCliError(`--model: missing model name in "${spec}"`);
  const task = known ? (suffix === 'embedding' ? 'embedding' : 'chat') : defaultTask;
  const model: SimModel = { name, task };
  if (suffix === 'reasoning') model.reasoning = true;
  if (maxModelLen !== undefined) model.maxModelLen = maxModelLen;
  return model;
}
