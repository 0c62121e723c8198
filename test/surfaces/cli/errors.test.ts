import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from '../admin/harness.js';
import { startGateway, tollgate } from './harness.js';

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('tollgate CLI: failures and settings', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let orgId: string;
  beforeAll(async () => {
    gw = await startGateway();
    orgId = (await gw.admin.call('POST', '/orgs', { name: 'Errors' })).body.id;
  });
  afterAll(() => gw.close());

  it('prints API errors as "error: <message> (<code>)" on stderr and exits 1', async () => {
    const [missing, invalid] = await Promise.all([
      gw.tollgate(['keys', 'show', 'key_missing', '--json']),
      gw.tollgate([
        'models',
        'add',
        '--id',
        'm',
        '--name',
        'm',
        '--hf-repo',
        'r/m',
        '--task',
        'vision',
        '--context-length',
        '10',
      ]),
    ]);
    expect(missing).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: API key key_missing does not exist. (not_found)\n',
    });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toBe(
      'error: Invalid request body. (invalid_request)\n  task_type: Must be one of: chat, embedding.\n',
    );
  });

  it('exits 2 with the usage line on bad usage, before any request', async () => {
    // An unreachable gateway proves nothing was sent: a request would exit 1.
    const env = { TOLLGATE_URL: `http://127.0.0.1:${await closedPort()}`, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN };
    const cases: [string[], string][] = [
      [
        ['keys', 'create', '--org', orgId, '--name', 'k', '--rpm', 'abc'],
        '--rpm must be a whole number from 1 to 1000000',
      ],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--tpm', '0'], '--tpm must be a whole number'],
      [['keys', 'update', 'key_1', '--response-cache', 'maybe'], '--response-cache must be true or false'],
      [['wallet', 'topup', '--org', orgId, '--amount', '12.5000000001'], 'at most 9 decimal places'],
      [['wallet', 'topup', '--org', orgId, '--amount', '0'], '--amount must be greater than 0'],
      [['wallet', 'adjust', '--org', orgId, '--amount', '-1.00'], '--note is required'],
      [
        ['prices', 'set', '--model', 'm', '--input', '0.0001', '--output', '1'],
        '--input: "0.0001" per million tokens has more than 3 decimal places',
      ],
      [['projects', 'list'], '--org is required'],
      [['orgs', 'list', '--bogus'], "Unknown option '--bogus'."],
      [['keys', 'show'], 'key ID is required'],
      [['keys', 'update', 'key_1'], 'nothing to change'],
    ];
    const runs = await Promise.all(cases.map(([args]) => tollgate(args, env)));
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!;
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(message);
      expect(run.stderr).toMatch(/\nusage: tollgate \w+ \w+/);
    });
  }, 60_000);

  it('says clearly when the gateway cannot be reached, and exits 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const run = await tollgate(['orgs', 'list', '--json'], { TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`cannot reach the gateway at ${url}`);
  });

  it('refuses a wrong operator token with unauthorized', async () => {
    const run = await gw.tollgate(['orgs', 'list'], { TOLLGATE_ADMIN_TOKEN: 'wrong-token-wrong-token' });
    expect(run).toMatchObject({ code: 1, stderr: 'error: Invalid operator token. (unauthorized)\n' });
  });

  it('reads the token from TOLLGATE_DATA_DIR/admin-token, and lets --url and --token win over the environment', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-cli-'));
    try {
      await writeFile(path.join(dir, 'admin-token'), `${ADMIN_TOKEN}\n`);
      const fromFile = await tollgate(['orgs', 'list', '--json'], { TOLLGATE_URL: gw.url, TOLLGATE_DATA_DIR: dir });
      expect(fromFile.code).toBe(0);
      expect(fromFile.json.data.map((o: { id: string }) => o.id)).toContain(orgId);
      const flags = await tollgate(['--json', 'orgs', 'list', '--url', gw.url, '--token', ADMIN_TOKEN], {
        TOLLGATE_URL: 'http://127.0.0.1:1',
        TOLLGATE_ADMIN_TOKEN: 'wrong-token-wrong-token',
      });
      expect(flags.code).toBe(0);
      expect(flags.json.object).toBe('list');
      const none = await tollgate(['orgs', 'list'], {
        TOLLGATE_URL: gw.url,
        TOLLGATE_DATA_DIR: path.join(dir, 'empty'),
      });
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('no operator token');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('prints help with exit 0', async () => {
    const run = await tollgate(['help'], {});
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('tollgate keys create --org ID --name N');
    expect(run.stdout).toContain('tollgate prices set --model ID --input 0.15 --output 0.60');
  });
});
