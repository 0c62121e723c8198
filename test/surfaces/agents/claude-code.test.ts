import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayProcess } from '../../helpers/processes.js';
import { skippedWithout } from '../../helpers/skips.js';
import { agentMissing, type ScriptedGateway, startScriptedGateway } from '../../helpers/agents.js';

/**
 * Claude Code, installed as its users install it (`npm install -g @anthropic-ai/claude-code`; CI
 * pins the version in `.ci/run`), pointed at the gateway as docs/agents.md says: `claude -p` on the
 * embedded default, whose simulator answers from a script. The first turn calls Claude Code's Write
 * tool, the second says it is done; Claude Code writes the file, and both of its requests are
 * billed as `messages` at exactly the usage the engine reported.
 */
const missing = agentMissing('claude', 'Claude Code');
skippedWithout(missing);
const run = promisify(execFile);

// The engine's usage for each turn: the script fixes it, so the usage records can be checked to the
// token.
const turns = [
  { prompt: 1234, completion: 21 },
  { prompt: 1300, completion: 5 },
];
// The demo's chat price, per token in nano-units (0.15 and 0.60 a million tokens).
const price = { input: 150n, output: 600n };

describe.skipIf(missing !== null)('Claude Code through /v1/messages (claude -p)', () => {
  let started: ScriptedGateway | undefined;
  let dir: string;
  let gateway: GatewayProcess;
  let key: string;

  beforeAll(async () => {
    started = await startScriptedGateway('claude-code', (dir) => scriptFor(path.join(dir, 'work', 'made.txt')));
    ({ dir, gateway, key } = started);
  });
  afterAll(async () => {
    await started?.stop();
  });

  it("writes a file with its Write tool, and each of its requests is billed as messages at the engine's usage", async () => {
    const work = path.join(dir, 'work');
    await mkdir(work);
    await mkdir(path.join(dir, 'home'));
    const { stdout } = await run('claude', ['-p', 'Write the file made.txt', '--allowedTools', 'Write'], {
      cwd: work,
      env: claudeEnv(gateway.url, key, path.join(dir, 'home')),
      // Not a timing check: a bound on a child that should end on its own, so a hung agent fails
      // the test.
      timeout: 120_000,
    });
    expect(stdout).toContain('The file is written.');
    expect(await readFile(path.join(work, 'made.txt'), 'utf8')).toBe('written by the gateway test\n');

    const response = await fetch(`${gateway.url}/v1/usage/requests`, { headers: { authorization: `Bearer ${key}` } });
    const { data } = (await response.json()) as { data: UsageRow[] };
    const rows = data.map((r) => ({
      endpoint: r.endpoint,
      model: r.model,
      streamed: r.streamed,
      status: r.status,
      source: r.usage_source,
      prompt: r.prompt_tokens,
      completion: r.completion_tokens,
      cost: r.cost_nanos,
    }));
    // Newest first: the answer after the tool's result, then the tool call.
    expect(rows).toEqual(
      [...turns].reverse().map((t) => ({
        endpoint: 'messages',
        model: 'sim-chat',
        streamed: true,
        status: 200,
        source: 'upstream',
        prompt: t.prompt,
        completion: t.completion,
        cost: String(BigInt(t.prompt) * price.input + BigInt(t.completion) * price.output),
      })),
    );
  });
});

interface UsageRow {
  endpoint: string;
  model: string;
  streamed: boolean;
  status: number;
  usage_source: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nanos: string;
}

/**
 * The simulator's script: turn 0 calls Write on `file`, turn 1 (after the tool's result) answers in
 * text.
 */
function scriptFor(file: string): string {
  const write = { name: 'Write', arguments: { file_path: file, content: 'written by the gateway test\n' } };
  return [
    { tool_calls: [write], prompt_tokens: turns[0]!.prompt, completion_tokens: turns[0]!.completion },
    { content: 'The file is written.', prompt_tokens: turns[1]!.prompt, completion_tokens: turns[1]!.completion },
  ]
    .map((turn) => JSON.stringify(turn))
    .join('\n');
}

/**
 * docs/agents.md's settings, and nothing of this process's environment but PATH: no key of the
 * machine's own reaches Claude Code, its HOME and temporary folder are the test's, and it calls
 * nothing but the gateway.
 */
function claudeEnv(url: string, key: string, home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: home,
    // Its temporary folder (`claude-<uid>`) too, so that the test's removal takes it.
    TMPDIR: home,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_AUTH_TOKEN: key,
    ANTHROPIC_MODEL: 'sim-chat',
    ANTHROPIC_SMALL_FAST_MODEL: 'sim-chat',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  };
}
