import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseModelSpec, parseSimArgs, SimCliError } from '../../src/sim/cli.js';
import { jsonOf } from './helpers.js';
import { repoRoot } from '../helpers/processes.js';

const root = repoRoot;
/**
 * The built simulator (the test run's global setup builds dist/), run by node itself: one process,
 * so a kill leaves nothing behind.
 */
const simulator = (args: string[]) => spawn(process.execPath, ['dist/sim/main.js', ...args], { cwd: root });

describe('parseSimArgs', () => {
  it('defaults to port 8000 and the two default models', () => {
    expect(parseSimArgs([], {})).toEqual({
      help: false,
      options: {
        host: '127.0.0.1',
        port: 8000,
        models: [
          { name: 'sim-chat', task: 'chat' },
          { name: 'sim-embed', task: 'embedding' },
        ],
      },
    });
  });

  it('reads flags over environment variables', () => {
    const { options } = parseSimArgs(
      ['--port', '0', '--itl-ms', '5', '--model', 'q:reasoning', '--model', 'bge:embedding'],
      {
        SIM_PORT: '9000',
        SIM_TTFT_MS: '20',
        SIM_FAILURE_RATE: '0.5',
      },
    ) as { options: any };
    expect(options).toMatchObject({ port: 0, ttftMs: 20, itlMs: 5, failureRate: 0.5 });
    expect(options.models).toEqual([
      { name: 'q', task: 'chat', reasoning: true },
      { name: 'bge', task: 'embedding' },
    ]);
  });

  it('sizes every embedding model with --embedding-dimensions (SIM_EMBEDDING_DIMENSIONS)', () => {
    const models = (argv: string[], env: Record<string, string> = {}) =>
      (parseSimArgs(argv, env) as { options: any }).options.models;
    expect(models(['--embedding-dimensions', '1024'])).toEqual([
      { name: 'sim-chat', task: 'chat' },
      { name: 'sim-embed', task: 'embedding', embeddingDimensions: 1024 },
    ]);
    expect(models(['--model', 'bge:embedding'], { SIM_EMBEDDING_DIMENSIONS: '8' })).toEqual([
      { name: 'bge', task: 'embedding', embeddingDimensions: 8 },
    ]);
    expect(() => parseSimArgs(['--embedding-dimensions', '0'], {})).toThrow(/--embedding-dimensions/);
  });

  it('keeps unknown suffixes in the model name', () => {
    expect(parseModelSpec('qwen:0.5b')).toEqual({ name: 'qwen:0.5b', task: 'chat' });
  });

  it('rejects invalid values', () => {
    for (const argv of [
      ['--port', 'abc'],
      ['--port', '70000'],
      ['--failure-rate', '2'],
      ['--ttft-ms', '-1'],
      ['--bogus'],
      ['--model', ':embedding'],
    ]) {
      expect(() => parseSimArgs(argv, {}), argv.join(' ')).toThrow(SimCliError);
    }
    expect(() => parseSimArgs([], { SIM_ITL_MS: 'soon' })).toThrow(/SIM_ITL_MS/);
  });
});

describe("parseSimArgs with vLLM's command line", () => {
  const modelsOf = (argv: string[], env: Record<string, string> = {}) =>
    (parseSimArgs(argv, env) as { options: any }).options.models;

  it('serves the positional repository under its own name, as vLLM does', () => {
    expect(modelsOf(['Qwen/Qwen2.5-0.5B-Instruct', '--port', '8000'])).toEqual([
      { name: 'Qwen/Qwen2.5-0.5B-Instruct', task: 'chat', toolCallParser: null },
    ]);
  });

  it('serves every --served-model-name, with --max-model-len, --host and --port', () => {
    const result = parseSimArgs(
      [
        'Qwen/Qwen2.5-0.5B-Instruct',
        '--served-model-name',
        'qwen',
        'qwen-0.5b',
        '--host',
        '0.0.0.0',
        '--port',
        '18000',
        '--max-model-len',
        '32768',
      ],
      {
        SIM_MODELS: 'ignored:embedding',
      },
    );
    expect(result).toEqual({
      help: false,
      options: {
        host: '0.0.0.0',
        port: 18000,
        models: [
          { name: 'qwen', task: 'chat', toolCallParser: null, maxModelLen: 32768 },
          { name: 'qwen-0.5b', task: 'chat', toolCallParser: null, maxModelLen: 32768 },
        ],
      },
    });
  });

  it('takes served names verbatim (no :suffix parsing)', () => {
    expect(modelsOf(['x', '--served-model-name', 'qwen:embedding'])).toEqual([
      { name: 'qwen:embedding', task: 'chat', toolCallParser: null },
    ]);
  });

  it('makes embedding models with --runner pooling, --task embed or embedding, --convert embed', () => {
    for (const flags of [
      ['--runner', 'pooling'],
      ['--task', 'embed'],
      ['--task=embedding'],
      ['--convert', 'embed'],
      ['--runner', 'pooling', '--task', 'auto'],
    ]) {
      expect(modelsOf(['BAAI/bge-small-en-v1.5', '--served-model-name', 'bge', ...flags]), flags.join(' ')).toEqual([
        { name: 'bge', task: 'embedding' },
      ]);
    }
    expect(modelsOf(['m', '--runner', 'generate'])).toEqual([{ name: 'm', task: 'chat', toolCallParser: null }]);
    // Applied to --model specs without a suffix too.
    expect(modelsOf(['--model', 'a', '--model', 'b:chat', '--runner', 'pooling'])).toEqual([
      { name: 'a', task: 'embedding' },
      { name: 'b', task: 'chat' },
    ]);
  });

  it('makes chat models reasoning ones with --reasoning-parser', () => {
    expect(
      modelsOf([
        'deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B',
        '--served-model-name',
        'r1',
        '--reasoning-parser',
        'deepseek_r1',
      ]),
    ).toEqual([{ name: 'r1', task: 'chat', toolCallParser: null, reasoning: true }]);
  });

  it("accepts vLLM's older `--model REPO --served-model-name NAME`", () => {
    expect(modelsOf(['--model', 'Qwen/Qwen2.5-7B', '--served-model-name', 'qwen'])).toEqual([
      { name: 'qwen', task: 'chat', toolCallParser: null },
    ]);
  });

  it('accepts and reports the vLLM flags it ignores, with their values', () => {
    const argv = [
      'Qwen/Qwen2.5-7B-Instruct',
      '--gpu-memory-utilization',
      '0.9',
      '--tensor-parallel-size',
      '2',
      '--enable-prefix-caching',
      '--dtype',
      'auto',
      '--enforce-eager',
      '--trust-remote-code',
      '--no-enable-chunked-prefill',
      '--max_num_seqs=64',
      '-tp',
      '2',
      '-O3',
      '--api-key',
      'secret',
      '--port',
      '9000',
    ];
    expect(parseSimArgs(argv, {})).toEqual({
      help: false,
      options: {
        host: '127.0.0.1',
        port: 9000,
        models: [{ name: 'Qwen/Qwen2.5-7B-Instruct', task: 'chat', toolCallParser: null }],
      },
      ignored: [
        '--gpu-memory-utilization',
        '0.9',
        '--tensor-parallel-size',
        '2',
        '--enable-prefix-caching',
        '--dtype',
        'auto',
        '--enforce-eager',
        '--trust-remote-code',
        '--no-enable-chunked-prefill',
        '--max-num-seqs',
        '64',
        '-tp',
        '2',
        '-O3',
        '--api-key',
        '***',
      ],
    });
  });

  it('reads --max_model_len like --max-model-len', () => {
    expect(modelsOf(['m', '--max_model_len', '128'])).toEqual([
      { name: 'm', task: 'chat', toolCallParser: null, maxModelLen: 128 },
    ]);
  });

  it('rejects unknown flags, missing values, two repositories and unsupported tasks', () => {
    for (const argv of [
      ['m', '--warp-drive'],
      ['m', '--warp-drive', '3'],
      ['m', '--gpu-memory-utilization'],
      ['m', '--served-model-name'],
      ['m', '--served-model-name', '--port', '1'],
      ['a', 'b'],
      ['m', '--runner', 'draft'],
      ['m', '--task', 'classify'],
      ['m', '--runner', 'generate', '--task', 'embed'],
      ['m', '--model', 'x'],
      ['m', '--served-model-name', 'a', 'a'],
      ['m', '--port'],
    ]) {
      expect(() => parseSimArgs(argv, {}), argv.join(' ')).toThrow(SimCliError);
    }
  });

  it('falls back to SIM_TTFT_MS and SIM_ITL_MS', () => {
    expect((parseSimArgs(['m'], { SIM_TTFT_MS: '7', SIM_ITL_MS: '3' }) as { options: any }).options).toMatchObject({
      ttftMs: 7,
      itlMs: 3,
    });
  });
});

describe('the simulator as a program (dist/sim/main.js)', () => {
  it('exits 2 on an invalid flag', async () => {
    const child = simulator(['--port', 'nope']);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('--port must be');
  });

  it("exits 2 on an unknown flag among vLLM's", async () => {
    const child = simulator(['org/model', '--enforce-eager', '--warp-drive']);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain("Unknown option '--warp-drive'");
  });

  it("serves vLLM's command line: served names, embeddings, ignored flags", async () => {
    const argv = [
      'BAAI/bge-small-en-v1.5',
      '--served-model-name',
      'bge',
      'bge-alias',
      '--runner',
      'pooling',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--gpu-memory-utilization',
      '0.2',
      '--enforce-eager',
    ];
    const child = simulator([...argv]);
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const match = /http:\/\/127\.0\.0\.1:\d+/.exec(out);
          if (match) resolve(match[0]);
        });
        child.on('exit', () => reject(new Error(`exited early: ${out}${stderr}`)));
      });
      const models = await jsonOf(fetch(`${url}/v1/models`));
      expect(models.data.map((m: any) => m.id)).toEqual(['bge', 'bge-alias']);
      const res = await fetch(`${url}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'bge-alias', input: 'hello' }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).data[0].embedding.length).toBeGreaterThan(0);
      expect(stderr).toContain('ignoring vLLM options: --gpu-memory-utilization 0.2 --enforce-eager');
    } finally {
      child.kill('SIGKILL');
    }
  }, 20_000);

  it('prints its URL, serves, and closes on SIGINT', async () => {
    const child = simulator(['--port', '0']);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const match = /http:\/\/127\.0\.0\.1:\d+/.exec(out);
          if (match) resolve(match[0]);
        });
        child.on('exit', () => reject(new Error(`exited early: ${out}`)));
      });
      expect((await fetch(`${url}/health`)).status).toBe(200);
      const models = await jsonOf(fetch(`${url}/v1/models`));
      expect(models.data.map((m: any) => m.id)).toEqual(['sim-chat', 'sim-embed']);
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 20_000);
});
