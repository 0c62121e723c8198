import { SimCliError } from './errors-cli.js';
import type { LoadedModelOptions } from './types.js';

/** The simulator's own flags of the loaded model (timings and the time scale), each taking a number. */
export const LOADED_SIM_FLAGS = [
  'time-scale',
  'prefill-ms-per-token',
  'decode-ms-per-step',
  'decode-ms-per-seq',
] as const;

/** What `--help` says of the loaded model. */
export const LOADED_USAGE = `
A loaded vLLM (running batch, waiting queue, KV cache with prefix caching,
GPU timings), on when --num-gpu-blocks-override or one of the timing flags is
given; otherwise every request runs at once with --ttft-ms/--itl-ms:
  --num-gpu-blocks-override N  KV-cache blocks (vLLM's flag, default 2048)
  --block-size N               tokens a block holds (vLLM's flag, default 16)
  --max-num-seqs N             the running batch's bound (vLLM's flag, default 256)
  --prefill-ms-per-token X     prefill time of an uncached prompt token (default 0.1)
  --decode-ms-per-step X       a decode step's fixed time (default 10)
  --decode-ms-per-seq X        a decode step's time per running sequence (default 0.25)
  --time-scale X               multiplies every simulated time (default 1; 0.1 = ten times faster)
  --scheduling-policy P        fcfs (vLLM's default: a request's non-zero "priority" is a 400) or
                               priority (the waiting queue by priority, lower first, then arrival; a
                               better waiting request preempts the worst running one when the batch
                               or the cache is full, which later prefills again and goes on)
Requests' "cache_salt" (a non-empty string) salts the first prompt block's hash, as vLLM does: two
prompts share cached blocks only when prefix and salt both match.
`;

/** vLLM's `--scheduling-policy` choices. */
const SCHEDULING_POLICIES = ['fcfs', 'priority'] as const;

/**
 * vLLM's `--scheduling-policy`, refused as argparse refuses a choice it does not know; undefined
 * when not given.
 *
 * @example
 * schedulingPolicyOf(new Map([['scheduling-policy', 'priority']])); // 'priority'
 */
export function schedulingPolicyOf(engine: ReadonlyMap<string, string>): 'fcfs' | 'priority' | undefined {
  const given = engine.get('scheduling-policy');
  if (given === undefined) return undefined;
  const policy = SCHEDULING_POLICIES.find((choice) => choice === given);
  if (!policy)
    throw new SimCliError(`argument --scheduling-policy: invalid choice: '${given}' (choose from 'fcfs', 'priority')`);
  return policy;
}

/**
 * The loaded model's options from the command line, or undefined when it is
 * off. vLLM's engine flags (`engine`, given as `vllm serve` takes them) count
 * only when the model is on; the simulator's own (`own`) turn it on.
 *
 * @example
 * loadedOptions(new Map([['num-gpu-blocks-override', '512']]), {}); // { numGpuBlocks: 512 }
 */
export function loadedOptions(
  engine: ReadonlyMap<string, string>,
  own: Partial<Record<(typeof LOADED_SIM_FLAGS)[number], string>>,
): LoadedModelOptions | undefined {
  const on = engine.has('num-gpu-blocks-override') || LOADED_SIM_FLAGS.some((flag) => own[flag] !== undefined);
  if (!on) return undefined;
  const read = (flag: string, text: string | undefined, integer: boolean): number | undefined => {
    if (text === undefined) return undefined;
    const value = Number(text);
    const valid =
      text.trim() !== '' && Number.isFinite(value) && (integer ? Number.isInteger(value) && value >= 1 : value >= 0);
    if (!valid || (flag === 'time-scale' && value === 0))
      throw new SimCliError(`--${flag} must be ${integer ? 'an integer >= 1' : 'a number > 0'}, got "${text}"`);
    return value;
  };
  const options: LoadedModelOptions = {};
  const set = <K extends keyof LoadedModelOptions>(key: K, value: number | undefined): void => {
    if (value !== undefined) options[key] = value;
  };
  set('numGpuBlocks', read('num-gpu-blocks-override', engine.get('num-gpu-blocks-override'), true));
  set('blockSize', read('block-size', engine.get('block-size'), true));
  set('maxNumSeqs', read('max-num-seqs', engine.get('max-num-seqs'), true));
  set('prefillMsPerToken', read('prefill-ms-per-token', own['prefill-ms-per-token'], false));
  set('decodeMsPerStep', read('decode-ms-per-step', own['decode-ms-per-step'], false));
  set('decodeMsPerSeq', read('decode-ms-per-seq', own['decode-ms-per-seq'], false));
  set('timeScale', read('time-scale', own['time-scale'], false));
  return options;
}
