import { parseArgs } from 'node:util';
import type { SimModel, SimulatorOptions } from './types.js';

/** A bad flag or environment value; the CLI prints it and exits 2. */
export class SimCliError extends Error {
  override name = 'SimCliError';
}

/** What `--help` prints. */
export const SIM_USAGE = `Usage: tsx src/sim/main.ts [options]

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
`;

/** The parsed command line: options for startSimulator, or a request for help. */
export type SimCliResult = { help: true } | { help: false; options: SimulatorOptions };

const DEFAULT_MODELS = ['sim-chat', 'sim-embed:embedding'];

/**
 * Reads simulator options from flags, falling back to SIM_* environment
 * variables. Throws SimCliError on any invalid value.
 *
 * @example
 * parseSimArgs(['--port', '0', '--model', 'qwen:reasoning'], {});
 */
export function parseSimArgs(argv: string[], env: Record<string, string | undefined>): SimCliResult {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
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
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new SimCliError((error as Error).message);
  }
  if (values.help) return { help: true };

  const pick = (flag: keyof typeof values, name: string): [string, string] | null => {
    const value = values[flag];
    if (typeof value === 'string') return [`--${flag}`, value];
    const fromEnv = env[name];
    return fromEnv === undefined || fromEnv === '' ? null : [name, fromEnv];
  };
  const number = (flag: keyof typeof values, name: string, check: (n: number) => boolean, expected: string) => {
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
  const specs = values.model ?? env.SIM_MODELS?.split(',').map((s) => s.trim()).filter(Boolean) ?? DEFAULT_MODELS;
  const models = specs.map((spec) => parseModelSpec(spec, maxModelLen));
  const names = new Set<string>();
  for (const model of models) {
    if (names.has(model.name)) throw new SimCliError(`--model: "${model.name}" is given twice`);
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
  return { help: false, options };
}

/**
 * `name`, `name:chat`, `name:embedding` or `name:reasoning`. Other colons stay
 * in the name (`qwen:0.5b` is a chat model called "qwen:0.5b").
 *
 * @example
 * parseModelSpec('bge:embedding'); // { name: 'bge', task: 'embedding' }
 */
export function parseModelSpec(spec: string, maxModelLen?: number): SimModel {
  const colon = spec.lastIndexOf(':');
  const suffix = colon < 0 ? '' : spec.slice(colon + 1);
  const known = suffix === 'chat' || suffix === 'embedding' || suffix === 'reasoning';
  const name = known ? spec.slice(0, colon) : spec;
  if (name.trim() === '') throw new SimCliError(`--model: missing model name in "${spec}"`);
  const model: SimModel = { name, task: suffix === 'embedding' ? 'embedding' : 'chat' };
  if (suffix === 'reasoning') model.reasoning = true;
  if (maxModelLen !== undefined) model.maxModelLen = maxModelLen;
  return model;
}
