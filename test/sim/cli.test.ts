import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseModelSpec, parseSimArgs, SimCliError } from '../../src/sim/cli.js';
import { jsonOf } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const tsx = `${root}node_modules/.bin/tsx`;

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
    const { options } = parseSimArgs(['--port', '0', '--itl-ms', '5', '--model', 'q:reasoning', '--model', 'bge:embedding'], {
      SIM_PORT: '9000',
      SIM_TTFT_MS: '20',
      SIM_FAILURE_RATE: '0.5',
    }) as { options: any };
    expect(options).toMatchObject({ port: 0, ttftMs: 20, itlMs: 5, failureRate: 0.5 });
    expect(options.models).toEqual([
      { name: 'q', task: 'chat', reasoning: true },
      { name: 'bge', task: 'embedding' },
    ]);
  });

  it('keeps unknown suffixes in the model name', () => {
    expect(parseModelSpec('qwen:0.5b')).toEqual({ name: 'qwen:0.5b', task: 'chat' });
  });

  it('rejects invalid values', () => {
    for (const argv of [['--port', 'abc'], ['--port', '70000'], ['--failure-rate', '2'], ['--ttft-ms', '-1'], ['--bogus'], ['--model', ':embedding']]) {
      expect(() => parseSimArgs(argv, {}), argv.join(' ')).toThrow(SimCliError);
    }
    expect(() => parseSimArgs([], { SIM_ITL_MS: 'soon' })).toThrow(/SIM_ITL_MS/);
  });
});

describe('src/sim/main.ts', () => {
  it('exits 2 on an invalid flag', async () => {
    const child = spawn(tsx, ['src/sim/main.ts', '--port', 'nope'], { cwd: root });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('--port must be');
  });

  it('prints its URL, serves, and closes on SIGINT', async () => {
    const child = spawn(tsx, ['src/sim/main.ts', '--port', '0'], { cwd: root });
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
