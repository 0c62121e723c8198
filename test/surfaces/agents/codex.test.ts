import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentMissing, type ScriptedGateway, startScriptedGateway } from '../../helpers/agents.js';
import type { GatewayProcess } from '../../helpers/processes.js';
import { skippedWithout } from '../../helpers/skips.js';

/**
 * Codex CLI, installed as its users install it (`npm install -g @openai/codex`; CI pins the version
 * in `.ci/run`), pointed at the gateway as docs/agents.md says: a `[model_providers.tollgate]`
 * block with `wire_api = "responses"`, and `codex exec` on the embedded default, whose simulator
 * answers from a script. The first turn calls Codex's `exec_command` tool, the second says it is
 * done; Codex runs the command, and both of its requests are billed as `responses` at exactly the
 * usage the engine reported.
 */
const missing = agentMissing('codex', 'Codex CLI');
skippedWithout(missing);
const run = promisify(execFile);

// The engine's usage for each turn: the script fixes it, so the usage records can be checked to the
// token.
const turns = [
  { prompt: 9876, completion: 17 },
  { prompt: 9950, completion: 4 },
];
// The demo's chat price, per token in nano-units (0.15 and 0.60 a million tokens).
const price = { input: 150n, output: 600n };

describe.skipIf(missing !== null)('Codex CLI through /v1/responses (codex exec)', () => {
  let started: ScriptedGateway | undefined;
  let dir: string;
  let gateway: GatewayProcess;
  let key: string;

  beforeAll(async () => {
    started = await startScriptedGateway('codex', () => script());
    ({ dir, gateway, key } = started);
  });
  afterAll(async () => {
    await started?.stop();
  });

  it("runs a command with its exec_command tool, and each of its requests is billed as responses at the engine's usage", async () => {
    const work = path.join(dir, 'work');
    const home = path.join(dir, 'home');
    await mkdir(work);
    await mkdir(home);
    await writeFile(path.join(home, 'config.toml'), codexConfig(gateway.url));
    const codex = run(
      'codex',
      ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', 'Write made.txt'],
      {
        cwd: work,
        env: { PATH: process.env.PATH, HOME: home, CODEX_HOME: home, TMPDIR: home, TOLLGATE_API_KEY: key },
        // Not a timing check: a bound on a child that should end on its own, so a hung agent fails
        // the test.
        timeout: 120_000,
      },
    );
    // `codex exec` reads more of its prompt from a stdin that is not a terminal until it closes.
    codex.child.stdin?.end();
    const { stdout } = await codex;
    expect(stdout).toContain('The file is written.');
    expect(await readFile(path.join(work, 'made.txt'), 'utf8')).toBe('made by codex\n');

    const response = await fetch(`${gateway.url}/v1/usage/requests`, { headers: { authorization: `Bearer ${key}` } });
    const { data } = (await response.json()) as { data: UsageRow[] };
    const rows = data.map((r) => ({
      endpoint: r.endpoint,
      streamed: r.streamed,
      status: r.status,
      source: r.usage_source,
      prompt: r.prompt_tokens,
      completion: r.completion_tokens,
      cost: r.cost_nanos,
    }));
    // Newest first: the answer after the command's output, then the tool call.
    expect(rows).toEqual(
      [...turns].reverse().map((t) => ({
        endpoint: 'responses',
        streamed: true,
        status: 200,
        source: 'upstream',
        prompt: t.prompt,
        completion: t.completion,
        cost: String(BigInt(t.prompt) * price.input + BigInt(t.completion) * price.output),
      })),
    );
  }, 150_000);
});

interface UsageRow {
  endpoint: string;
  streamed: boolean;
  status: number;
  usage_source: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nanos: string;
}

/**
 * docs/agents.md's `~/.codex/config.toml`, with the update check and analytics off so Codex calls
 * only the gateway.
 */
function codexConfig(url: string): string {
  return [
    'model = "sim-chat"',
    'model_provider = "tollgate"',
    'check_for_update_on_startup = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[model_providers.tollgate]',
    'name = "Tollgate"',
    `base_url = "${url}/v1"`,
    'env_key = "TOLLGATE_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
}

/**
 * The simulator's script: turn 0 calls exec_command, turn 1 (after the command's output) answers in
 * text.
 */
function script(): string {
  const command = { name: 'exec_command', arguments: { cmd: 'echo made by codex > made.txt' } };
  return [
    { tool_calls: [command], prompt_tokens: turns[0]!.prompt, completion_tokens: turns[0]!.completion },
    { content: 'The file is written.', prompt_tokens: turns[1]!.prompt, completion_tokens: turns[1]!.completion },
  ]
    .map((turn) => JSON.stringify(turn))
    .join('\n');
}
