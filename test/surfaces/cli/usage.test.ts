import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { tollgate } from './harness.js';

const ADMIN_TOKEN = 'test-operator-token-0123456789';

/**
 * `tollgate usage` against a real gateway that has billed traffic: tokens and
 * cost per key and model, with an API key (its organization only) or with the
 * operator token (every organization, or one); `--version`; an unknown command.
 */
describe('tollgate usage', () => {
  let gateway: TestGateway;
  let acme: { orgId: string; secret: string; keyId: string };
  let other: { orgId: string; secret: string; keyId: string };

  const chat = (secret: string, model: string) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Count the tokens of this.' }] }),
    }).then((response) => response.text());

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    acme = await gateway.tenant();
    other = await gateway.tenant();
    await Promise.all([
      chat(acme.secret, 'sim-chat'),
      chat(acme.secret, 'sim-chat'),
      chat(acme.secret, 'sim-reasoner'),
      chat(other.secret, 'sim-chat'),
    ]);
    await gateway.charged();
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const run = (args: string[], env: Record<string, string>) =>
    tollgate(['usage', ...args], { TOLLGATE_URL: gateway.url, ...env });

  it("with an API key: its organization's tokens and cost per key and model, money from nano-units", async () => {
    const { code, json } = await run(['--json'], { TOLLGATE_API_KEY: acme.secret });
    expect(code).toBe(0);
    expect(json.data.map((g: { key_id: string; model: string }) => `${g.key_id} ${g.model}`).sort()).toEqual([
      `${acme.keyId} sim-chat`,
      `${acme.keyId} sim-reasoner`,
    ]);
    const sum = json.data.reduce((total: bigint, g: { cost_nanos: string }) => total + BigInt(g.cost_nanos), 0n);
    expect(sum.toString()).toBe(json.totals.cost_nanos);
    const text = await run([], { TOLLGATE_API_KEY: acme.secret });
    const chatRow = json.data.find((g: { model: string }) => g.model === 'sim-chat');
    expect(text.stdout).toMatch(
      /^Usage from \S+ to \S+:\nKEY\s+NAME\s+MODEL\s+REQUESTS\s+PROMPT\s+CACHED\s+COMPLETION\s+REASONING\s+TOTAL\s+COST \(USD\)\n/,
    );
    expect(text.stdout).toMatch(
      new RegExp(
        `${acme.keyId}\\s+test\\s+sim-chat\\s+2\\s+${chatRow.prompt_tokens}\\s+${chatRow.prompt_tokens_details.cached_tokens}\\s+${chatRow.completion_tokens}\\s+${chatRow.completion_tokens_details.reasoning_tokens}\\s+${chatRow.total_tokens}\\s+${chatRow.cost.replace('.', '\\.')}\\n`,
      ),
    );
    expect(text.stdout).toMatch(/\ntotal\s+3\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\.\d+\n$/);
  });

  it("hostile: a key never sees another organization's usage, whatever it asks for", async () => {
    const asked = await run(['--json', '--org', other.orgId, '--api-key', acme.secret], {});
    expect(asked).toMatchObject({ code: 2, stdout: '' });
    expect(asked.stderr).toContain('--org is for the operator token');
    const direct = await fetch(`${gateway.baseURL}/usage/summary?group_by=key_model&org_id=${other.orgId}`, {
      headers: { authorization: `Bearer ${acme.secret}` },
    });
    const body = (await direct.json()) as { data: { key_id: string }[] };
    expect(direct.status).toBe(200);
    expect(body.data.map((g) => g.key_id)).not.toContain(other.keyId);
  });

  it('with the operator token: every organization, or the one asked for; a window bounds it', async () => {
    const all = await run(['--json'], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(all.code, all.stderr).toBe(0);
    expect(all.json.totals.requests).toBe(4);
    const one = await run(['--json', '--org', other.orgId], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(one.json.data).toEqual([expect.objectContaining({ key_id: other.keyId, model: 'sim-chat', requests: 1 })]);
    const before = await run(['--json', '--from', '2020-01-01', '--to', '2020-02-01'], {
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    });
    expect(before.json.totals).toMatchObject({ requests: 0, cost_nanos: '0' });
    expect((await run(['--org', 'org_missing'], { TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN })).code).toBe(1);
  });
});

describe('tollgate --version and unknown commands', () => {
  it('--version prints the version only', async () => {
    const { version } = (await import('../../../package.json', { with: { type: 'json' } })).default;
    expect(await tollgate(['--version'], {})).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('an unknown command is answered in two lines, with the closest command', async () => {
    const cases: [string[], RegExp][] = [
      [['kyes', 'list'], /^did you mean: tollgate keys list /],
      [['orgs', 'explode'], /^did you mean: tollgate orgs \w+/],
      [['usge'], /^did you mean: tollgate usage /],
    ];
    for (const [args, closest] of cases) {
      const run = await tollgate(args, {});
      expect(run.code).toBe(2);
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines, run.stderr).toHaveLength(2);
      expect(lines[0]).toBe(`error: unknown command "${args.join(' ')}"`);
      expect(lines[1]).toMatch(closest);
    }
  });
});
