import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { agent, type AgentRun } from './agent-process.js';

// A turn's cost as the agent prints it is the gateway's charge to the nano-unit, its prompt's
// cached tokens (the simulator's prefix cache holds the conversation's start from the turn before)
// at the cached-input price.
const SCRIPT = [
  { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
  { tool_calls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] },
  { content: 'Read it twice.' },
];

type Record_ = {
  id: string;
  prompt_tokens: number;
  completion_tokens: number;
  cost_nanos: string;
  prompt_tokens_details: { cached_tokens: number };
};

describe('tollgate code prices a turn with cached tokens as the gateway bills it', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;
  let tmp: string;
  let run: AgentRun | undefined;

  beforeAll(async () => {
    sim = await startSimulator({
      host: '127.0.0.1',
      models: [{ name: 'agent-cached', task: 'chat', maxModelLen: 8192, script: SCRIPT }],
      loaded: { decodeMsPerStep: 0, prefillMsPerToken: 0 },
    });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-code-cached-'));
    const engines = [{ kind: 'static', model: 'agent-cached', url: sim.url }];
    await writeFile(path.join(tmp, 'engines.json'), JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    await gateway.services.catalog.add({
      id: 'agent-cached',
      displayName: 'Agent cached',
      hfRepoId: 'tollgate-test/agent-cached',
      taskType: 'chat',
      contextLength: 8192,
      enabled: true,
    });
    // A cached price far below the input price: a turn priced at the input rate alone is visibly
    // wrong.
    await gateway.services.catalog.setPrice('agent-cached', 150n, 600n, { cachedInputPerToken: 15n });
    await mkdir(path.join(tmp, 'project'));
    await writeFile(path.join(tmp, 'project', 'notes.txt'), 'remember the milk\n'.repeat(40));
  }, 60_000);
  afterAll(async () => {
    run?.kill();
    await gateway?.close();
    await sim?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it("each turn's cost_nanos and cached tokens equal its usage record; the session's cost is their sum", async () => {
    const { secret } = await gateway.tenant();
    const env = { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: secret, TOLLGATE_CONFIG_DIR: path.join(tmp, 'config') };
    run = agent(
      ['-p', 'read notes.txt', '-m', 'agent-cached', '--approval', 'yolo', '--output-format', 'stream-json'],
      env,
      path.join(tmp, 'project'),
    );
    expect(await run.exit, run.stderr).toBe(0);
    await gateway.charged();
    const page = (await (
      await fetch(`${gateway.baseURL}/usage/requests?model=agent-cached`, {
        headers: { authorization: `Bearer ${secret}` },
      })
    ).json()) as { data: Record_[] };
    const events = run.events();
    const turns = events.filter((e) => e.type === 'turn');
    expect(turns).toHaveLength(3);
    const printed = turns.map((t) => [t.request_id, t.prompt_tokens, t.cached_tokens, t.cost_nanos]).sort();
    const recorded = page.data
      .map((r) => [r.id, r.prompt_tokens, r.prompt_tokens_details.cached_tokens, r.cost_nanos])
      .sort();
    expect(printed).toEqual(recorded);
    // The later turns repeat the conversation's start: the engine read it from its cache, and
    // billed it so.
    expect(page.data.filter((r) => r.prompt_tokens_details.cached_tokens > 0).length).toBeGreaterThanOrEqual(2);
    const billed = page.data.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
    expect(events.at(-1)).toMatchObject({ type: 'result', cost_nanos: billed.toString() });
  }, 90_000);
});
