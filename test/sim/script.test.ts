import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSimArgs } from '../../src/sim/cli.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, sseChunks } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'sim-script-'));
const file = join(dir, 'agent.jsonl');
writeFileSync(
  file,
  [
    { reasoning: 'I should look.', tool_calls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
    { content: 'It says hello.', completion_tokens: 40, prompt_tokens: 100 },
    { tool_calls: [{ name: 'write_file', arguments: '{"path": "/tm' }], finish_reason: 'length' },
    { error: { status: 429, message: 'Slow down.' } },
  ]
    .map((turn) => JSON.stringify(turn))
    .join('\n'),
);

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ models: [{ name: 'agent', task: 'chat', reasoning: true, script: file }] });
});
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

const user = { role: 'user', content: 'Read the README' };
const assistant = { role: 'assistant', content: 'x' };

describe('scripted mode', () => {
  it('answers turn K for a request with K assistant messages', async () => {
    const first = await jsonOf(await post(sim, '/v1/chat/completions', { model: 'agent', messages: [user] }));
    expect(first.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: { reasoning: 'I should look.', content: null },
    });
    expect(first.choices[0].message.tool_calls[0].function).toEqual({
      name: 'read_file',
      arguments: '{"path":"README.md"}',
    });
    expect(first.usage.completion_tokens_details.reasoning_tokens).toBe(4);

    const second = await jsonOf(
      await post(sim, '/v1/chat/completions', {
        model: 'agent',
        messages: [user, assistant, { role: 'tool', tool_call_id: 'a', content: 'hello' }],
      }),
    );
    expect(second.choices[0].message.content).toBe('It says hello.');
    expect(second.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 40 });
  });

  it('streams a cut tool call with finish_reason length', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'agent',
      messages: [user, assistant, assistant],
      stream: true,
    });
    const { chunks } = sseChunks(await res.text());
    const args = chunks
      .flatMap((c) => c.choices[0].delta.tool_calls ?? [])
      .map((c: any) => c.function.arguments)
      .join('');
    expect(args).toBe('{"path": "/tm');
    expect(chunks.at(-1).choices[0].finish_reason).toBe('length');
  });

  it('answers a scripted error, and a 400 past the end of the script', async () => {
    const limited = await post(sim, '/v1/chat/completions', {
      model: 'agent',
      messages: [user, assistant, assistant, assistant],
    });
    expect(limited.status).toBe(429);
    expect((await jsonOf(limited)).error.message).toBe('Slow down.');
    const past = await post(sim, '/v1/chat/completions', {
      model: 'agent',
      messages: [user, assistant, assistant, assistant, assistant],
    });
    expect(past.status).toBe(400);
    expect((await jsonOf(past)).error.message).toContain('4 turns');
  });

  it('refuses a broken script at start, naming the file and the turn', async () => {
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, JSON.stringify({ turns: [{ content: 'ok' }, { finish_reason: 'maybe' }] }));
    await expect(startSimulator({ models: [{ name: 'x', task: 'chat', script: broken }] })).rejects.toThrow(
      /broken\.json: turn 1: finish_reason/,
    );
  });
});

describe('command line', () => {
  it('takes --script, and vLLM tool flags in vLLM form', () => {
    const scripted = parseSimArgs(['--model', 'a', '--script', file], {});
    expect(!scripted.help && scripted.options.models[0]).toMatchObject({ script: file });
    const vllm = parseSimArgs(
      ['Qwen/Qwen3-8B', '--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--reasoning-parser', 'qwen3'],
      {},
    );
    expect(!vllm.help && vllm.options.models[0]).toMatchObject({ toolCallParser: 'hermes', reasoning: true });
    expect(!vllm.help && vllm.ignored).toBeUndefined();
    const bare = parseSimArgs(['Qwen/Qwen3-8B'], {});
    expect(!bare.help && bare.options.models[0]?.toolCallParser).toBeNull();
    expect(() => parseSimArgs(['Qwen/Qwen3-8B', '--enable-auto-tool-choice'], {})).toThrow(
      /requires --tool-call-parser/,
    );
  });
});
