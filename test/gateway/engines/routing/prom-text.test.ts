import { afterEach, describe, expect, it } from 'vitest';
import { parsePromText } from '../../../../src/gateway/engines/routing/prom-text.js';
import { loadFromSamples } from '../../../../src/gateway/engines/routing/scraper.js';
import { startSimulator, type RunningSimulator } from '../../../../src/sim/index.js';

/**
 * vLLM's own exposition, as /work/shared/research/vllm.md (section 1.8) quotes it, plus an info
 * gauge and a histogram as prometheus_client writes them.
 */
const VLLM_SAMPLE = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen-0.5b"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen-0.5b"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="qwen-0.5b"} 0.1875
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="qwen-0.5b"} 51234.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="qwen-0.5b"} 40960.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_cpu_blocks="0",num_gpu_blocks="27531"} 1.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="qwen-0.5b"} 42.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="qwen-0.5b"} 50.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="qwen-0.5b"} 50.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="qwen-0.5b"} 4.25
`;

let sim: RunningSimulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

/** The value of the sample with exactly these labels. */
function valueOf(text: string, name: string, labels: Record<string, string>): number | undefined {
  return parsePromText(text).find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value;
}

describe('the Prometheus text parser', () => {
  it("reads vLLM's metric names (colons included), labels and values", () => {
    const samples = parsePromText(VLLM_SAMPLE);
    expect(samples.find((s) => s.name === 'vllm:kv_cache_usage_perc')).toEqual({
      name: 'vllm:kv_cache_usage_perc',
      labels: { engine: '0', model_name: 'qwen-0.5b' },
      value: 0.1875,
    });
    expect(
      samples.find((s) => s.name === 'vllm:time_to_first_token_seconds_bucket' && s.labels.le === '+Inf')?.value,
    ).toBe(50);
    const labels = { engine: '0', model_name: 'qwen-0.5b' };
    expect(valueOf(VLLM_SAMPLE, 'vllm:num_requests_running', labels)).toBe(3);
    expect(valueOf(VLLM_SAMPLE, 'vllm:prefix_cache_hits_total', labels)).toBe(40960);
    expect(valueOf(VLLM_SAMPLE, 'vllm:time_to_first_token_seconds_sum', labels)).toBe(4.25);
    expect(parsePromText(VLLM_SAMPLE)).toHaveLength(10);
    const load = loadFromSamples(samples, 'qwen-0.5b', null);
    expect(load).toMatchObject({
      running: 3,
      waiting: 0,
      kvCacheUsage: 0.1875,
      prefixQueries: 51234,
      prefixHits: 40960,
      kvBlocks: 27531,
      prefixHitRate: null,
    });
  });

  it("reads the loaded simulator's /metrics with the same parser", async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat' }],
      loaded: { numGpuBlocks: 300, decodeMsPerStep: 0 },
    });
    const content = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ');
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content }], max_tokens: 2 }),
      });
      expect(res.status).toBe(200);
    }
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    const labels = { engine: '0', model_name: 'sim-chat' };
    expect(valueOf(text, 'vllm:generation_tokens_total', labels)).toBe(4);
    expect(
      valueOf(text, 'vllm:request_success_total', { engine: '0', finished_reason: 'length', model_name: 'sim-chat' }),
    ).toBe(2);
    // Every non-comment line is a sample the parser reads.
    expect(parsePromText(text)).toHaveLength(
      text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length,
    );
    const load = loadFromSamples(parsePromText(text), 'sim-chat', null);
    expect(load).toMatchObject({ running: 0, waiting: 0, kvCacheUsage: 0, kvBlocks: 300, prefixQueries: 2 * 86 });
    expect(load!.prefixHits).toBe(80);
  });

  it('unescapes label values, reads special values and timestamps, and skips lines it cannot read', () => {
    const samples = parsePromText(
      'a{x="q\\"uo\\\\te\\nnl"} NaN\nb +Inf 1700000000000\nc -Inf\nd{broken 1\ne 1e3\n\n# comment\nf{} 2',
    );
    expect(samples.map((s) => s.name)).toEqual(['a', 'b', 'c', 'e', 'f']);
    expect(samples[0]!.labels.x).toBe('q"uo\\te\nnl');
    expect(Number.isNaN(samples[0]!.value)).toBe(true);
    expect(samples.slice(1).map((s) => s.value)).toEqual([Infinity, -Infinity, 1000, 2]);
  });

  it('takes the hit rate over the growth of the counters since the previous scrape', () => {
    const first = loadFromSamples(
      parsePromText('vllm:prefix_cache_queries_total 1000\nvllm:prefix_cache_hits_total 100'),
      'm',
      null,
    );
    const second = loadFromSamples(
      parsePromText('vllm:prefix_cache_queries_total 2000\nvllm:prefix_cache_hits_total 900'),
      'm',
      first,
    );
    expect(second!.prefixHitRate).toBe(0.8);
    expect(
      loadFromSamples(
        parsePromText('vllm:prefix_cache_queries_total 2000\nvllm:prefix_cache_hits_total 900'),
        'm',
        second,
      )!.prefixHitRate,
    ).toBeNull();
  });

  it("reads llama.cpp's llamacpp:* series as real figures, and no known series as an unknown load", () => {
    const llama = parsePromText(
      '# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 4\nllamacpp:requests_deferred 6\nllamacpp:prompt_tokens_total 120',
    );
    expect(loadFromSamples(llama, 'm', null)).toMatchObject({ waiting: 6, running: 4, kvCacheUsage: 0 });
    // Before: every such replica read as idle (waiting 0, running 0, KV 0), and the prefix score
    // sent a burst to one.
    expect(loadFromSamples(parsePromText('process_cpu_seconds_total 3'), 'm', null)).toBeNull();
  });
});
