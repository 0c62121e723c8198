import type { Scheduler } from './scheduler.js';
import type { ResolvedModel, SimStats } from './types.js';

/** How a request ended, the `finished_reason` label of `vllm:request_success_total`. */
export type FinishedReason = 'stop' | 'length' | 'abort' | 'error';

/** Live counters of one served model. */
export interface ModelCounters {
  name: string;
  maxModelLen: number;
  running: number;
  /**
   * Without a loaded model no queue is simulated: every admitted request runs at once (the
   * scheduler's counts replace these).
   */
  waiting: number;
  /** Prompt plus generated tokens of running requests, for the KV-cache gauge. */
  kvTokens: number;
  promptTokens: number;
  generationTokens: number;
  aborted: number;
  completed: number;
  finished: Record<FinishedReason, number>;
}

/** The simulated KV cache holds this many full-context sequences. */
const KV_CAPACITY_SEQUENCES = 8;
const FINISHED_REASONS: readonly FinishedReason[] = ['stop', 'length', 'abort', 'error'];

/** Counters per model, rendered as vLLM's Prometheus metrics. */
export class SimMetrics {
  private readonly byModel = new Map<string, ModelCounters>();
  /**
   * Loaded models' schedulers: their batch, queue, KV cache and prefix cache are what the gauges
   * report.
   */
  readonly schedulers = new Map<string, Scheduler>();

  constructor(models: readonly ResolvedModel[]) {
    for (const model of models) {
      this.byModel.set(model.name, {
        name: model.name,
        maxModelLen: model.maxModelLen,
        running: 0,
        waiting: 0,
        kvTokens: 0,
        promptTokens: 0,
        generationTokens: 0,
        aborted: 0,
        completed: 0,
        finished: { stop: 0, length: 0, abort: 0, error: 0 },
      });
    }
  }

  /**
   * The counters of one model (which must be served).
   *
   * @example
   * metrics.counters('sim-chat').running++;
   */
  counters(name: string): ModelCounters {
    const counters = this.byModel.get(name);
    if (!counters) throw new Error(`no counters for model ${name}`);
    return counters;
  }

  /**
   * Totals over all models.
   *
   * @example
   * metrics.stats().running; // 0 when idle
   */
  stats(): SimStats {
    const total: SimStats = { running: 0, waiting: 0, aborted: 0, completed: 0, promptTokens: 0, generationTokens: 0 };
    for (const c of this.byModel.values()) {
      const scheduler = this.schedulers.get(c.name);
      total.running += scheduler ? scheduler.numRunning : c.running;
      total.waiting += scheduler ? scheduler.numWaiting : c.waiting;
      if (scheduler) {
        total.prefixQueries = (total.prefixQueries ?? 0) + scheduler.queries;
        total.prefixHits = (total.prefixHits ?? 0) + scheduler.hits;
      }
      total.aborted += c.aborted;
      total.completed += c.completed;
      total.promptTokens += c.promptTokens;
      total.generationTokens += c.generationTokens;
    }
    return total;
  }

  /**
   * Prometheus text exposition with vLLM's metric names and labels.
   *
   * @example
   * const text = metrics.render(); // 'vllm:num_requests_running{engine="0",model_name="sim-chat"} 0.0\n...'
   */
  render(): string {
    const models = [...this.byModel.values()];
    const labels = (c: ModelCounters): string => `engine="0",model_name="${escapeLabel(c.name)}"`;
    const family = (name: string, type: string, help: string, value: (c: ModelCounters) => number): string =>
      `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n` +
      models.map((c) => `${name}{${labels(c)}} ${formatValue(value(c))}\n`).join('');
    const loaded = (c: ModelCounters) => this.schedulers.get(c.name);
    let text =
      family(
        'vllm:num_requests_running',
        'gauge',
        'Number of requests in model execution batches.',
        (c) => loaded(c)?.numRunning ?? c.running,
      ) +
      family(
        'vllm:num_requests_waiting',
        'gauge',
        'Number of requests waiting to be processed.',
        (c) => loaded(c)?.numWaiting ?? c.waiting,
      ) +
      family(
        'vllm:kv_cache_usage_perc',
        'gauge',
        'KV-cache usage. 1 means 100 percent usage.',
        (c) => loaded(c)?.kvUsage ?? Math.min(1, c.kvTokens / (c.maxModelLen * KV_CAPACITY_SEQUENCES)),
      ) +
      family(
        'vllm:prefix_cache_queries_total',
        'counter',
        'Prefix cache queries, in terms of number of queried tokens.',
        (c) => loaded(c)?.queries ?? 0,
      ) +
      family(
        'vllm:prefix_cache_hits_total',
        'counter',
        'Prefix cache hits, in terms of number of cached tokens.',
        (c) => loaded(c)?.hits ?? 0,
      ) +
      family(
        'vllm:num_preemptions_total',
        'counter',
        'Cumulative number of preemption from the engine.',
        (c) => loaded(c)?.preemptions ?? 0,
      ) +
      family('vllm:prompt_tokens_total', 'counter', 'Number of prefill tokens processed.', (c) => c.promptTokens) +
      family(
        'vllm:generation_tokens_total',
        'counter',
        'Number of generation tokens processed.',
        (c) => c.generationTokens,
      );
    text +=
      '# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n';
    for (const c of models) text += `vllm:cache_config_info{${cacheConfigLabels(c, loaded(c))},${labels(c)}} 1.0\n`;
    text += '# HELP vllm:request_success_total Count of successfully processed requests.\n';
    text += '# TYPE vllm:request_success_total counter\n';
    for (const c of models) {
      for (const reason of FINISHED_REASONS) {
        text += `vllm:request_success_total{engine="0",finished_reason="${reason}",model_name="${escapeLabel(c.name)}"} ${formatValue(c.finished[reason])}\n`;
      }
    }
    return text;
  }
}

// vLLM's CacheConfig as labels (values as Python prints them); without a loaded model, the KV room
// the usage gauge assumes.
function cacheConfigLabels(c: ModelCounters, scheduler: Scheduler | undefined): string {
  const blockSize = scheduler?.settings.blockSize ?? 16;
  const blocks = scheduler?.settings.numGpuBlocks ?? Math.ceil((c.maxModelLen * KV_CAPACITY_SEQUENCES) / blockSize);
  return `block_size="${blockSize}",cache_dtype="auto",enable_prefix_caching="${scheduler ? 'True' : 'False'}",gpu_memory_utilization="0.9",num_cpu_blocks="0",num_gpu_blocks="${blocks}"`;
}

// prometheus_client prints floats: 3.0, 0.1875.
function formatValue(value: number): string {
  return Number.isInteger(value) ? `${value}.0` : String(value);
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
