import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SimCliError } from './errors-cli.js';
import { LOADED_SIM_FLAGS, loadedOptions, schedulingPolicyOf } from './loaded-args.js';
import type { SimModel, SimulatorOptions } from './types.js';
import { type SplitArgs, splitVllmArgs, VLLM_ENGINE_FLAGS } from './vllm-args.js';

export { SimCliError } from './errors-cli.js';
export { VLLM_BOOLEAN_FLAGS, VLLM_LIST_FLAGS, VLLM_VALUE_FLAGS } from './vllm-args.js';

export { SIM_USAGE } from './cli-usage.js';

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
  'embedding-dimensions',
  // vLLM flags the simulator reads (see vllmTask and reasoning below).
  'runner',
  'task',
  'convert',
  'reasoning-parser',
  'tool-call-parser',
  'script',
  ...LOADED_SIM_FLAGS,
]);

/** The simulator's own flags (vLLM's are in `vllm-args.ts`); each also has a `SIM_*` variable. */
const SIM_OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  model: { type: 'string', multiple: true },
  'ttft-ms': { type: 'string' },
  'itl-ms': { type: 'string' },
  'failure-rate': { type: 'string' },
  'startup-delay-ms': { type: 'string' },
  'max-model-len': { type: 'string' },
  'default-max-tokens': { type: 'string' },
  'embedding-dimensions': { type: 'string' },
  runner: { type: 'string' },
  task: { type: 'string' },
  convert: { type: 'string' },
  'reasoning-parser': { type: 'string' },
  'tool-call-parser': { type: 'string' },
  script: { type: 'string' },
  'time-scale': { type: 'string' },
  'prefill-ms-per-token': { type: 'string' },
  'decode-ms-per-step': { type: 'string' },
  'decode-ms-per-seq': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

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
  const split = splitVllmArgs(argv, SIM_VALUE_FLAGS);
  let values;
  try {
    ({ values } = parseArgs({
      args: split.rest,
      strict: true,
      allowPositionals: false,
      options: SIM_OPTIONS,
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
  chatExtras(models, split, values['tool-call-parser'], pick('script', 'SIM_SCRIPT')?.[1]);
  const dimensions = number('embedding-dimensions', 'SIM_EMBEDDING_DIMENSIONS', isPositiveInt, 'an integer >= 1');
  if (dimensions !== undefined)
    for (const model of models) if (model.task === 'embedding') model.embeddingDimensions = dimensions;
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
  const loaded = loadedOptions(split.engineValues, values);
  const policy = schedulingPolicyOf(split.engineValues);
  if (policy) options.schedulingPolicy = policy;
  let ignored = withoutFlag(
    split.ignored.filter((flag) => flag !== '--enable-auto-tool-choice'),
    '--scheduling-policy',
  );
  if (loaded) {
    options.loaded = loaded;
    ignored = withoutEngineFlags(ignored);
  }
  return ignored.length > 0 ? { help: false, options, ignored } : { help: false, options };
}

/**
 * Tool calling and scripted mode on the chat models. vLLM's own form (a
 * positional repository) calls tools on "auto" only with
 * --enable-auto-tool-choice --tool-call-parser, as vLLM does; the
 * simulator's --model form does by default (the hermes parser).
 */
function chatExtras(
  models: SimModel[],
  split: SplitArgs,
  parser: string | undefined,
  script: string | undefined,
): void {
  const autoTools = split.ignored.includes('--enable-auto-tool-choice');
  if (autoTools && !parser) throw new SimCliError('--enable-auto-tool-choice requires --tool-call-parser');
  const vllmForm = split.positionals.length > 0 || split.servedNames !== undefined;
  const toolParser = autoTools ? (parser as string) : vllmForm ? null : undefined;
  for (const model of models) {
    if (model.task !== 'chat') continue;
    if (toolParser !== undefined) model.toolCallParser = toolParser;
    if (script !== undefined) model.script = script;
  }
}

// The ignored list without one value flag the simulator reads whether loaded or not.
function withoutFlag(ignored: string[], flag: string): string[] {
  const at = ignored.indexOf(flag);
  return at < 0 ? ignored : [...ignored.slice(0, at), ...ignored.slice(at + 2)];
}

// The ignored list without the engine flags a loaded model reads (each followed by its value).
function withoutEngineFlags(ignored: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < ignored.length; i++) {
    if (VLLM_ENGINE_FLAGS.has(ignored[i]!.slice(2))) i++;
    else kept.push(ignored[i]!);
  }
  return kept;
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
  if (split.positionals.length > 1)
    throw new SimCliError(`unexpected argument "${split.positionals[1]}" (one model repository at most)`);
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
  const list =
    specs ??
    env.SIM_MODELS?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ??
    DEFAULT_MODELS;
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
      throw new SimCliError(
        `${flag} ${value} is not supported by the simulator (expected ${Object.keys(map).join(', ')})`,
      );
    }
    const picked = map[value];
    if (!picked) continue;
    if (chosen && chosen !== picked)
      throw new SimCliError(`${flag} ${value} contradicts an earlier --runner/--task/--convert`);
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
