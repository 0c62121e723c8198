import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';
import { type ScriptedUpstream, startScriptedUpstream } from './scripted-upstream.js';
import { openTerminal, type Terminal, tmuxMissing } from './terminal.js';

// Money first, in a terminal: each call's max_tokens sized so its hold fits the wallet, a call the
// wallet cannot pay not started (the screen says why, with the numbers), /cost read back from the
// key's usage records.
describe.skipIf(tmuxMissing !== null)('tollgate code and the wallet, in tmux', () => {
  let upstream: ScriptedUpstream;
  let gateway: TestGateway;
  let tmp: string;
  let project: string;
  let term: Terminal | undefined;
  const bin = path.join(repoRoot, 'bin/tollgate.mjs');
  const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });
  const usageOf = async (secret: string) =>
    (
      (await (
        await fetch(`${gateway.baseURL}/usage/requests?limit=500`, { headers: { authorization: `Bearer ${secret}` } })
      ).json()) as { data: Array<{ id: string; cost_nanos: string; status: number }> }
    ).data;
  const walletOf = async (secret: string) =>
    BigInt(
      (
        (await (
          await fetch(`${gateway.baseURL}/wallet`, { headers: { authorization: `Bearer ${secret}` } })
        ).json()) as { balance_nanos: string }
      ).balance_nanos,
    );
  async function start(secret: string): Promise<Terminal> {
    term = openTerminal('money', project, {
      TOLLGATE_URL: gateway.url,
      TOLLGATE_API_KEY: secret,
      TOLLGATE_CONFIG_DIR: path.join(tmp, 'config'),
    });
    term.type(`node ${bin} code --approval yolo`);
    term.press('Enter');
    await term.shows('the banner', /tollgate code · model sim-chat/);
    return term;
  }

  beforeAll(async () => {
    upstream = await startScriptedUpstream();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-money-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: upstream.url }] }),
    );
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    project = path.join(tmp, 'project');
    await mkdir(project);
    await writeFile(path.join(project, 'hello.txt'), 'hello world\n');
  }, 60_000);
  afterEach(() => {
    term?.close();
    term = undefined;
    upstream.release();
    upstream.clear();
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it('a wallet for about two turns never goes below zero: each max_tokens fits the wallet, and the turn it cannot pay is not started, with the numbers', async () => {
    // sim-chat: 0.15 in, 0.60 out per million tokens; max_output_tokens 2000: a call holds about
    // 0.0018 USD. An engine that reports far more output than asked is charged all of max_tokens
    // (the gateway clamps usage to it): the most expensive calls there can be.
    await mkdir(path.join(tmp, 'config'), { recursive: true });
    await writeFile(path.join(tmp, 'config/config.json'), JSON.stringify({ limits: { max_output_tokens: 2000 } }));
    const { secret } = await gateway.tenant({ credit: '0.0036' });
    const costly = { prompt: 500, completion: 1_000_000 };
    upstream.push(
      ...Array.from({ length: 6 }, () => ({ toolCalls: [call('read_file', { path: 'hello.txt' })], usage: costly })),
    );
    const t = await start(secret);
    t.type('read hello.txt again and again');
    t.press('Enter');
    await t.shows('the stop and why', /stopped: not started: the wallet cannot pay for this turn/, 30_000);
    await t.shows('the wallet after it', /wallet 0\.\d+ USD\n/);
    const shown = t.screen();
    await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-wallet.txt'), shown).catch(() => undefined);
    expect(shown).toMatch(/It may cost up to 0\.\d+ USD \(\d+ bytes of conversation at 0\.15 per million tokens in/);
    expect(shown).toMatch(/and the wallet has 0\.\d+ USD\. Top up in the portal \(Wallet\)/);
    expect(shown).toContain('the wallet is low:');
    await gateway.charged();
    // The first calls with max_tokens 2000, the last held to what the wallet could still pay, then
    // none.
    const maxTokens = upstream.requests.map((body) => (body as { max_tokens?: number }).max_tokens!);
    expect(maxTokens.length).toBeGreaterThanOrEqual(2);
    expect(maxTokens[0]).toBe(2000);
    expect(maxTokens.at(-1)).toBeLessThan(2000);
    expect(maxTokens.at(-1)).toBeGreaterThanOrEqual(256);
    const records = await usageOf(secret);
    expect(records).toHaveLength(maxTokens.length);
    const spent = records.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
    expect(spent).toBeLessThanOrEqual(3_600_000n);
    expect(await walletOf(secret)).toBeGreaterThanOrEqual(0n);
    await writeFile(path.join(repoRoot, 'test-results', 'tollgate-code-wallet.txt'), shown).catch(() => undefined);
  }, 90_000);

  it('/cost equals the key’s usage records, a cancelled turn included; /model shows the prices', async () => {
    const { secret } = await gateway.tenant();
    const t = await start(secret);
    upstream.push({ text: 'The first answer.' }, { text: 'A long answer that goes on', hold: true });
    t.type('first');
    t.press('Enter');
    await t.shows('the first answer', /The first answer\.\n(.*\n)*.*wallet /);
    t.type('tell me a story');
    t.press('Enter');
    await t.shows('the stream under way', 'A long answer that goes on');
    t.press('C-c');
    await t.shows('the cancel', 'cancelled (the gateway bills only what was generated)');
    await until('the gateway saw the client leave', () => upstream.hungUp >= 1);
    await gateway.charged();
    await until('both calls recorded', async () => (await usageOf(secret)).length === 2);
    const records = await usageOf(secret);
    const billed = records.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
    t.type('/cost');
    t.press('Enter');
    const amount = `${Number(billed) / 1e9}`.replace(/0+$/, '');
    // One session cost, the billed one: the cancelled call, which no answer counted, is in it.
    await t.shows(
      'the session cost',
      /session \S+: 0\.\d+ USD billed for 2 requests, \d+ tokens in, \d+ out \(the key's usage records\)/,
    );
    const line = /session \S+: (0\.\d+) USD billed/.exec(t.screen())![1]!;
    expect(BigInt(line.replace('0.', '').padEnd(9, '0'))).toBe(billed);
    expect(amount).not.toBe('');
    expect(t.screen()).not.toMatch(/counted here/);
    t.type('/model');
    t.press('Enter');
    await t.shows('the prices', '* sim-chat  (context 8192 tokens)  0.15 USD in / 0.60 USD out per million tokens');
  }, 90_000);
});
