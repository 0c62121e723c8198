import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { agentMissing } from '../../helpers/agents.js';
import {
  adminCallTo,
  freePort,
  type GatewayProcess,
  repoRoot,
  startGatewayProcess,
  type TestChild,
  waitForHealth,
} from '../../helpers/processes.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';

/**
 * Claude Code on a full fleet (docs/fair-sharing.md): one engine replica that runs one sequence,
 * held by another client's long stream; Claude Code's request waits TOLLGATE_FLOW_MAX_WAIT_MS and
 * is answered 529 `overloaded_error`. Claude Code retries by itself; once the fleet has room (the
 * stream ends) it gets its answer, and only that request is billed.
 */
const missing = agentMissing('claude', 'Claude Code');
skippedWithout(missing);
const run = promisify(execFile);
const ADMIN_TOKEN = 'claude-overload-operator-token-0123456789';
// What the engine reports for Claude Code's one turn (the script fixes it), and the price set
// below.
const turn = { prompt: 2345, completion: 7 };
const price = { input: 150n, output: 600n };

describe.skipIf(missing !== null)('Claude Code answered 529 on a full fleet (claude -p)', () => {
  let dir: string;
  let sim: TestChild | undefined;
  let gateway: GatewayProcess | undefined;
  let key: string;
  const admin = <T>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(gateway!.url, ADMIN_TOKEN, method, route, body);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-claude-overload-'));
    // Turn 0 is Claude Code's; turn 2 (two answers in its history) the holder's, long enough to
    // outlast a slow start.
    const turns = [
      { content: 'Through the queue at last.', prompt_tokens: turn.prompt, completion_tokens: turn.completion },
      { content: 'unused' },
      { content: Array.from({ length: 4000 }, (_, i) => `word${i}`).join(' ') },
    ];
    await writeFile(path.join(dir, 'turns.jsonl'), turns.map((t) => JSON.stringify(t)).join('\n'));
    const port = await freePort();
    sim = startBuilt(
      'sim-claude-overload',
      'dist/sim/main.js',
      [
        'sim-chat',
        ...['--host', '127.0.0.1', '--port', String(port), '--max-num-seqs', '1', '--decode-ms-per-step', '10'],
        ...[
          '--script',
          path.join(dir, 'turns.jsonl'),
          '--enable-auto-tool-choice',
          '--tool-call-parser',
          'hermes',
          '--max-model-len',
          '131072',
        ],
      ],
      { cwd: repoRoot, env: process.env },
    );
    await waitForHealth(sim, `http://127.0.0.1:${port}/health`);
    const engine = { kind: 'static', model: 'sim-chat', engine: 'vllm', urls: [`http://127.0.0.1:${port}/v1`] };
    await writeFile(path.join(dir, 'engines.json'), JSON.stringify({ engines: [{ ...engine, max_num_seqs: 1 }] }));
    gateway = await startGatewayProcess('claude-overload', {
      TOLLGATE_DATA_DIR: path.join(dir, 'data'),
      TOLLGATE_ENGINES_FILE: path.join(dir, 'engines.json'),
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINE_POLL_MS: '200',
      TOLLGATE_FLOW_MAX_WAIT_MS: '300',
    });
    await admin('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 131_072,
    });
    await admin('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    const org = await admin<{ id: string }>('POST', '/orgs', { name: 'overloaded' });
    await admin('POST', `/orgs/${org.id}/wallet/topups`, { amount: '5.00' });
    ({ secret: key } = await admin<{ secret: string }>('POST', `/orgs/${org.id}/keys`, { name: 'claude' }));
    await until('the replica is ready', async () => {
      const engines = await admin<{ data: Array<{ replicas: Array<{ state: string }> }> }>('GET', '/engines');
      return engines.data[0]?.replicas[0]?.state === 'ready';
    });
  }, 120_000);

  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await sim?.stop('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * What the gateway answered at once on /v1/messages (streams aside): each status's count
   * (`tollgate_requests_total`).
   */
  const messagesAnswered = async () => {
    const text = await (
      await fetch(`${gateway!.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).text();
    const counts: Record<string, number> = {};
    for (const line of text.split('\n').filter((l) => l.startsWith('tollgate_requests_total{'))) {
      const status = /status="(\d+)"/.exec(line)?.[1];
      if (/route="[^"]*messages"/.test(line) && status)
        counts[status] = (counts[status] ?? 0) + Number(line.split(' ')[1]);
    }
    return counts;
  };

  it('retries the 529 by itself and completes once the fleet has room; only the answered request is billed', async () => {
    const holder = new AbortController();
    const held = await fetch(`${gateway!.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim-chat',
        stream: true,
        max_tokens: 8000,
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'a' },
          { role: 'user', content: 'two' },
          { role: 'assistant', content: 'b' },
          { role: 'user', content: 'three' },
        ],
      }),
      signal: holder.signal,
    });
    expect(held.status).toBe(200);
    const holding = (async () => {
      for await (const _ of held.body!) void _;
    })().catch(() => {});

    const home = path.join(dir, 'home');
    await mkdir(path.join(dir, 'work'), { recursive: true });
    await mkdir(home, { recursive: true });
    const claude = run('claude', ['-p', 'Say something.'], {
      cwd: path.join(dir, 'work'),
      env: {
        PATH: process.env.PATH,
        HOME: home,
        TMPDIR: home,
        ANTHROPIC_BASE_URL: gateway!.url,
        ANTHROPIC_AUTH_TOKEN: key,
        ANTHROPIC_MODEL: 'sim-chat',
        ANTHROPIC_SMALL_FAST_MODEL: 'sim-chat',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
      // Not a timing check: a bound on a child that should end on its own, so a hung agent fails
      // the test.
      timeout: 90_000,
    });
    // The overload is brief: the fleet frees as soon as Claude Code has been refused once.
    await until('Claude Code was answered 529', async () => ((await messagesAnswered())['529'] ?? 0) >= 1, {
      timeout: 60_000,
    });
    holder.abort();
    await holding;
    const { stdout } = await claude.catch((e: { stdout: string; stderr: string }) => {
      console.log('OUT', e.stdout, 'ERR', e.stderr);
      throw e;
    });
    expect(stdout).toContain('Through the queue at last.');
    // Answered at once on /v1/messages only with 529s (a stream is counted as it ends, under its
    // task's route).
    expect(Object.keys(await messagesAnswered())).toEqual(['529']);

    const response = await fetch(`${gateway!.url}/v1/usage/requests`, { headers: { authorization: `Bearer ${key}` } });
    const { data } = (await response.json()) as { data: UsageRow[] };
    const messages = data.filter((r) => r.endpoint === 'messages');
    // Its one request, tried until it got through: one answer billed, at the engine's count; the
    // 529s cost nothing.
    expect(messages.map((r) => [r.status, r.prompt_tokens, r.completion_tokens, r.cost_nanos])).toEqual([
      [
        200,
        turn.prompt,
        turn.completion,
        String(BigInt(turn.prompt) * price.input + BigInt(turn.completion) * price.output),
      ],
    ]);
  }, 150_000);
});

interface UsageRow {
  endpoint: string;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nanos: string;
}
