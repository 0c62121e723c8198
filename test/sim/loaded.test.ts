import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseSimArgs } from '../../src/sim/cli.js';
import { KvCache, promptBlockHashes } from '../../src/sim/kv-cache.js';
import { promptTokenStrings } from '../../src/sim/prompt.js';
import type { LoadedModelOptions, RunningSimulator } from '../../src/sim/index.js';
import { startSimulator } from '../../src/sim/index.js';
import { post } from './helpers.js';

const opened: RunningSimulator[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((sim) => sim.close()));
});

async function loadedSim(loaded: LoadedModelOptions): Promise<RunningSimulator> {
  const sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 8192 }], loaded });
  opened.push(sim);
  return sim;
}

/** One gauge or counter's value for sim-chat, read from /metrics. */
async function metric(sim: RunningSimulator, name: string): Promise<number> {
  const text = await (await fetch(`${sim.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  if (!line) throw new Error(`${name} not in /metrics`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

function chat(sim: RunningSimulator, content: string, maxTokens: number): Promise<Response> {
  return post(sim, '/v1/chat/completions', {
    model: 'sim-chat',
    messages: [{ role: 'user', content }],
    max_tokens: maxTokens,
    ignore_eos: true,
  });
}

/**
 * A prompt of `words` distinct words starting at `from`: no two such prompts share a block unless
 * their ranges overlap at the start.
 */
function words(count: number, tag: string): string {
  return Array.from({ length: count }, (_, i) => `${tag}${i}`).join(' ');
}

describe('KvCache', () => {
  it('reuses leading cached blocks, keeps released ones until their room is needed, and evicts the least recently released first', () => {
    const cache = new KvCache(6, 2);
    const a = promptBlockHashes(['a', 'b', 'c', 'd', 'e', 'f'], 2);
    const first = cache.allocate(a, 0)!;
    expect(first.hitBlocks).toBe(0);
    expect(cache.usedBlocks).toBe(3);
    cache.release(first);
    expect(cache.usedBlocks).toBe(0);
    expect(cache.cachedFreeBlocks).toBe(3);
    // Same first two blocks, different third: two hits.
    const b = promptBlockHashes(['a', 'b', 'c', 'd', 'x', 'y'], 2);
    const second = cache.allocate(b, 1)!;
    expect(second.hitBlocks).toBe(2);
    expect(cache.usedBlocks).toBe(4);
    // Left: one empty block and a's third (cached, unreferenced): three more do not fit.
    expect(cache.allocate(promptBlockHashes(['p', 'q', 'r', 's', 't', 'u'], 2), 0)).toBeNull();
    // Two fit: the empty one, then a's tail evicted, never the referenced blocks.
    const third = cache.allocate(promptBlockHashes(['p', 'q', 'r', 's'], 2), 0)!;
    expect(third.hitBlocks).toBe(0);
    expect(cache.usedBlocks).toBe(6);
    expect(cache.allocate(promptBlockHashes(['z', 'z'], 2), 0)).toBeNull();
    cache.release(second);
    cache.release(third);
    expect(cache.allocate(a, 0)!.hitBlocks).toBe(2);
  });

  it('chains block hashes: a block equal in tokens but after a different prefix hashes differently', () => {
    const [, tailAfterA] = promptBlockHashes(['a', 'a', 'z', 'z'], 2);
    const [, tailAfterB] = promptBlockHashes(['b', 'b', 'z', 'z'], 2);
    expect(tailAfterA).not.toBe(tailAfterB);
    expect(promptBlockHashes(['a', 'b', 'c'], 2)).toHaveLength(1);
  });

  it('hashes as many tokens as the simulator counts for a chat prompt', () => {
    const tokens = promptTokenStrings([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello, world!' },
    ]);
    // 3 + 3 words/punctuation... + 3 per message, 3 for the reply.
    expect(tokens).toHaveLength(3 + 3 + 3 + 4 + 3);
  });
});

describe('a loaded simulator', () => {
  it('runs at most --max-num-seqs requests and queues the rest', async () => {
    // Long generations (1,000 steps of 20 ms): the state holds until the simulator closes.
    const sim = await loadedSim({ maxNumSeqs: 2, decodeMsPerStep: 20 });
    const answers = [1, 2, 3, 4].map((i) => chat(sim, `request ${i}`, 1000).catch(() => null));
    await vi.waitFor(
      async () => {
        expect(await metric(sim, 'vllm:num_requests_running')).toBe(2);
        expect(await metric(sim, 'vllm:num_requests_waiting')).toBe(2);
      },
      { timeout: 5000 },
    );
    expect(await metric(sim, 'vllm:kv_cache_usage_perc')).toBeGreaterThan(0);
    expect(sim.stats()).toMatchObject({ running: 2, waiting: 2 });
    await sim.close();
    await Promise.all(answers);
  });

  it('answers every queued request in full once the batch has room', async () => {
    const sim = await loadedSim({ maxNumSeqs: 1, decodeMsPerStep: 1 });
    const answers = await Promise.all([1, 2, 3].map((i) => chat(sim, `request ${i}`, 20)));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(20);
    }
    expect(await metric(sim, 'vllm:num_requests_running')).toBe(0);
    expect(await metric(sim, 'vllm:kv_cache_usage_perc')).toBe(0);
  });

  it('counts prefix-cache queries and hits in tokens: a repeated prompt hits every full block but the last token', async () => {
    const sim = await loadedSim({ decodeMsPerStep: 0, prefillMsPerToken: 0 });
    const prompt = words(100, 'w');
    const promptTokens = ((await (await chat(sim, prompt, 2)).json()) as { usage: { prompt_tokens: number } }).usage
      .prompt_tokens;
    expect(await metric(sim, 'vllm:prefix_cache_queries_total')).toBe(promptTokens);
    expect(await metric(sim, 'vllm:prefix_cache_hits_total')).toBe(0);
    expect((await chat(sim, prompt, 2)).status).toBe(200);
    expect(await metric(sim, 'vllm:prefix_cache_queries_total')).toBe(2 * promptTokens);
    expect(await metric(sim, 'vllm:prefix_cache_hits_total')).toBe(Math.floor((promptTokens - 1) / 16) * 16);
  });

  it("reports the prefix cache's hits as usage.prompt_tokens_details.cached_tokens, in JSON and in the stream's last usage", async () => {
    const sim = await loadedSim({ decodeMsPerStep: 0, prefillMsPerToken: 0 });
    const prompt = words(100, 'c');
    type Usage = { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } | null };
    const first = ((await (await chat(sim, prompt, 2)).json()) as { usage: Usage }).usage;
    expect(first.prompt_tokens_details).toEqual({ cached_tokens: 0 });
    const second = ((await (await chat(sim, prompt, 2)).json()) as { usage: Usage }).usage;
    const hits = Math.floor((first.prompt_tokens - 1) / 16) * 16;
    expect(second.prompt_tokens_details).toEqual({ cached_tokens: hits });
    const streamed = await post(sim, '/v1/chat/completions', {
      model: 'sim-chat',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const last = (await streamed.text())
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => JSON.parse(line.slice(6)) as { usage?: Usage })
      .at(-1);
    expect(last?.usage?.prompt_tokens_details).toEqual({ cached_tokens: hits });
  });

  it('skips the prefill of cached blocks: a repeated long prompt answers its first token sooner', async () => {
    // 1 ms a token: a 2,000-token prefill takes 2 s, a cached one a few ms.
    const sim = await loadedSim({ decodeMsPerStep: 1, prefillMsPerToken: 1 });
    const prompt = words(2000, 'p');
    const started = performance.now();
    await chat(sim, prompt, 1);
    const cold = performance.now() - started;
    const again = performance.now();
    await chat(sim, prompt, 1);
    const warm = performance.now() - again;
    expect(cold).toBeGreaterThan(1900);
    expect(warm).toBeLessThan(cold / 2);
  });

  it('evicts unreferenced blocks when the cache is full, and queues a request no block can be freed for', async () => {
    // 30 blocks of 16 tokens; a 406-token prompt has 25 full blocks, 26 with 4 tokens of output. 30
    // ms steps: the two 60-token generations below take 1.8 s each, long enough to see the second
    // wait.
    const sim = await loadedSim({ numGpuBlocks: 30, decodeMsPerStep: 30 });
    const a = words(400, 'a');
    await chat(sim, a, 4);
    // b takes the 5 empty blocks, then evicts a's 21 last blocks (tail first): a's first 4 stay
    // cached.
    await chat(sim, words(400, 'b'), 4);
    const hitsBefore = await metric(sim, 'vllm:prefix_cache_hits_total');
    await chat(sim, a, 4);
    expect((await metric(sim, 'vllm:prefix_cache_hits_total')) - hitsBefore).toBe(4 * 16);
    // With 60 tokens of output each takes all 30 blocks: the second waits for the first's.
    const both = [chat(sim, words(400, 'c'), 60), chat(sim, words(400, 'd'), 60)];
    await vi.waitFor(
      async () => {
        expect(await metric(sim, 'vllm:num_requests_running')).toBe(1);
        expect(await metric(sim, 'vllm:num_requests_waiting')).toBe(1);
      },
      { timeout: 3000 },
    );
    for (const res of await Promise.all(both)) expect(res.status).toBe(200);
  }, 20_000);

  it('refuses a request larger than the whole KV cache with a 400', async () => {
    const sim = await loadedSim({ numGpuBlocks: 4 });
    const res = await chat(sim, words(100, 'x'), 4);
    expect(res.status).toBe(400);
  });

  it('reports vLLM cache_config_info with block size, blocks and prefix caching, per model', async () => {
    const sim = await loadedSim({ numGpuBlocks: 512, blockSize: 32 });
    const text = await (await fetch(`${sim.url}/metrics`)).text();
    expect(text).toContain('# TYPE vllm:cache_config_info gauge');
    expect(text).toMatch(
      /vllm:cache_config_info\{block_size="32",[^}]*enable_prefix_caching="True",[^}]*num_gpu_blocks="512",engine="0",model_name="sim-chat"\} 1\.0/,
    );
  });

  it('stops its queued and running requests when closed', async () => {
    const sim = await loadedSim({ maxNumSeqs: 1, decodeMsPerStep: 50 });
    const pending = [chat(sim, 'one', 1000).catch(() => null), chat(sim, 'two', 1000).catch(() => null)];
    await vi.waitFor(async () => expect(await metric(sim, 'vllm:num_requests_waiting')).toBe(1));
    await sim.close();
    await Promise.all(pending);
    expect(sim.stats().running).toBe(0);
  });
});

describe('the loaded model on the command line', () => {
  it('is on with --num-gpu-blocks-override, reading --block-size and --max-num-seqs as vLLM does', () => {
    const parsed = parseSimArgs(
      [
        'm',
        '--num-gpu-blocks-override',
        '1024',
        '--block-size=32',
        '--max_num_seqs',
        '8',
        '--time-scale',
        '0.05',
        '--dtype',
        'auto',
      ],
      {},
    );
    expect(parsed).toEqual({
      help: false,
      options: {
        host: '127.0.0.1',
        port: 8000,
        models: [{ name: 'm', task: 'chat', toolCallParser: null }],
        loaded: { numGpuBlocks: 1024, blockSize: 32, maxNumSeqs: 8, timeScale: 0.05 },
      },
      ignored: ['--dtype', 'auto'],
    });
  });

  it('is off without them: --max-num-seqs alone stays ignored', () => {
    const parsed = parseSimArgs(['m', '--max-num-seqs', '8'], {});
    expect(parsed).toMatchObject({ options: { models: [{ name: 'm' }] }, ignored: ['--max-num-seqs', '8'] });
    expect(parsed.help === false && parsed.options.loaded).toBeUndefined();
  });

  it('rejects a zero time scale and a fractional block count', () => {
    expect(() => parseSimArgs(['m', '--time-scale', '0'], {})).toThrow(/--time-scale/);
    expect(() => parseSimArgs(['m', '--num-gpu-blocks-override', '1.5'], {})).toThrow(/--num-gpu-blocks-override/);
  });
});
