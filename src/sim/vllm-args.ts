import { SimCliError } from './errors-cli.js';

// vLLM's `vllm serve` command line, apart from the simulator's own flags:
// the flags vLLM knows, which the simulator accepts and ignores, and the
// split of a command line into both.

/** vLLM flags that take exactly one value, which the simulator ignores. */
// Kept packed (by section, as vLLM's --help lists them): the formatter would put one name a line.
// prettier-ignore
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
  'api-key',
  'lora-modules',
  'middleware',
  'cuda-graph-sizes',
  'ignore-patterns',
  'logits-processors',
]);

/** vLLM flags without a value (`--no-X` accepted too), ignored. */
// Kept packed (as vLLM's --help lists them): the formatter would put one name a line.
// prettier-ignore
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

/** vLLM flags the loaded model reads (see loaded-args.ts); ignored without it. */
export const VLLM_ENGINE_FLAGS: ReadonlySet<string> = new Set([
  'max-num-seqs',
  'block-size',
  'num-gpu-blocks-override',
  'scheduling-policy',
]);

/** vLLM's short spellings of value flags (`-tp 2`), ignored. */
const VLLM_SHORT_VALUE_FLAGS = new Set([
  '-tp',
  '-pp',
  '-dcp',
  '-dp',
  '-dpn',
  '-dpr',
  '-dpl',
  '-dpa',
  '-dpp',
  '-dpb',
  '-q',
  '-O',
]);

export interface SplitArgs {
  /** What node's parseArgs checks: the simulator's own flags, as `--name=value` or booleans. */
  rest: string[];
  positionals: string[];
  servedNames?: string[];
  ignored: string[];
  /** The values of VLLM_ENGINE_FLAGS, which a loaded model reads (they stay in `ignored` otherwise). */
  engineValues: Map<string, string>;
}

/**
 * Separates vLLM's command line from the simulator's: takes out the
 * positional model repository, --served-model-name's list, and every known
 * vLLM flag the simulator ignores (with its value). `--max_model_len` is read
 * as `--max-model-len`, as vLLM does. Unknown flags stay in `rest`, where
 * parseArgs rejects them.
 */
export function splitVllmArgs(argv: string[], simValueFlags: ReadonlySet<string>): SplitArgs {
  const out: SplitArgs = { rest: [], positionals: [], ignored: [], engineValues: new Map() };
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
        while (inline === undefined && i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-'))
          names.push(argv[++i] as string);
        if (names.length === 0) throw new SimCliError(`${flag} needs at least one name`);
        out.servedNames = [...(out.servedNames ?? []), ...names];
      } else if (simValueFlags.has(name)) {
        out.rest.push(`${flag}=${inline ?? takeValue(flag, ++i)}`);
      } else if (VLLM_VALUE_FLAGS.has(name)) {
        const value = inline ?? takeValue(flag, ++i);
        out.ignored.push(flag, value);
        if (VLLM_ENGINE_FLAGS.has(name)) out.engineValues.set(name, value);
      } else if (VLLM_LIST_FLAGS.has(name)) {
        const list = inline !== undefined ? [inline] : [takeValue(flag, ++i)];
        while (inline === undefined && i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-'))
          list.push(argv[++i] as string);
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
