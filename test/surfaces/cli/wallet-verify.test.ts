import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/surfaces/cli/main.js';
import { ADMIN_TOKEN } from '../admin/harness.js';
import { startGateway } from './harness.js';

describe('tollgate wallet verify', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let orgId: string;
  let terminal = false;
  const tollgate = async (...args: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await main([...args, '--url', gw.url, '--token', ADMIN_TOKEN], {
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
      stderrIsTerminal: terminal,
    });
    return { code, stdout, stderr };
  };

  beforeAll(async () => {
    gw = await startGateway();
    const { orgs, keys, wallets } = gw.admin.services;
    orgId = (await orgs.create('Acme')).id;
    const { key } = await keys.create({ orgId, name: 'k' });
    expect((await tollgate('wallet', 'topup', '--org', orgId, '--amount', '2.00')).code).toBe(0);
    const usage = { orgId, keyId: key.id, modelId: 'm', endpoint: '/v1/chat/completions', latencyMs: 3 };
    await wallets.chargeMany(
      [
        { ...usage, id: 'req_a', promptTokens: 10, completionTokens: 5, cost: 1_234n, status: 200, streamed: false },
        { ...usage, id: 'req_b', promptTokens: 10, completionTokens: 2, cost: 777n, status: 499, streamed: true },
        { ...usage, id: 'req_free', promptTokens: 10, completionTokens: 5, cost: 0n, status: 200, streamed: false },
      ].map((r) => ({ ...r, usageSource: 'upstream' })),
    );
  });
  afterAll(() => gw.close());

  it('says the books agree (exit 0), and names a hand-edited row (exit 1, with --json too)', async () => {
    const clean = await tollgate('wallet', 'verify', '--org', orgId);
    expect(clean).toMatchObject({ code: 0, stderr: '' });
    expect(clean.stdout).toContain('agree');
    expect(clean.stdout).toContain('3 usage records');

    await gw.admin.services.db.execute(sql`update usage_records set cost_nanos = 778 where id = 'req_b'`);
    // The edit is behind the checkpoint the first verification left: only a full one reads that far
    // back.
    expect((await tollgate('wallet', 'verify', '--org', orgId)).stdout).toContain('0 of them new since');
    const edited = await tollgate('wallet', 'verify', '--org', orgId, '--full');
    expect(edited.code).toBe(1);
    expect(edited.stderr).toContain('differ in 1 place');
    expect(edited.stderr).toMatch(/charge_differs: entry \d+, request req_b: expected 778, found 777/);

    // A script reads the report on stdout and the verdict in the exit code, as without --json.
    const json = await tollgate('wallet', 'verify', '--org', orgId, '--full', '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, difference_count: 1 });
    expect(json.stderr).toContain('differ in 1 place');

    await gw.admin.services.db.execute(sql`update usage_records set cost_nanos = 777 where id = 'req_b'`);
    const mended = await tollgate('wallet', 'verify', '--org', orgId, '--full', '--json');
    expect(mended).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(mended.stdout)).toMatchObject({ ok: true, difference_count: 0, mode: 'full' });
  });

  it('shows how far it has read on a terminal, and nothing of it elsewhere', async () => {
    const quiet = await tollgate('wallet', 'verify', '--org', orgId, '--full');
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    terminal = true;
    try {
      const shown = await tollgate('wallet', 'verify', '--org', orgId, '--full');
      expect(shown.code).toBe(0);
      expect(shown.stderr).toMatch(/\rverifying: \d+ (ledger entries|usage records) read \(\d+%\)/);
      // The line is cleared before the answer, which goes to stdout alone.
      expect(shown.stderr.endsWith('\r\x1b[K')).toBe(true);
      expect(shown.stdout).toContain('agree');
    } finally {
      terminal = false;
    }
  });
});
