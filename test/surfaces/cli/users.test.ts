import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../src/surfaces/cli/main.js';
import { ADMIN_TOKEN } from '../admin/harness.js';
import { startGateway, tollgate } from './harness.js';

const PASSWORD = 'correct horse battery staple';

/** `main` in this process with a fake terminal as stdin, the lines typed up front. */
async function inTerminal(args: string[], typed: string) {
  const stdin = Object.assign(new PassThrough(), { isTTY: true });
  stdin.end(typed);
  let stdout = '';
  let stderr = '';
  const code = await main(args, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), stdin });
  return { code, stdout, stderr };
}

describe('tollgate CLI: users, keys acting as users, and models for an API key', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let orgId: string;
  const env = () => ({ TOLLGATE_URL: gw.url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN });
  const passwordOf = async (userId: string, password: string) =>
    gw.admin.services.passwords.verify(password, (await gw.admin.services.users.get(userId)).passwordHash);

  beforeAll(async () => {
    gw = await startGateway();
    orgId = (await gw.admin.call('POST', '/orgs', { name: 'People' })).body.id;
  });
  afterAll(() => gw.close());

  it('creates, lists, shows, updates and deletes users, the password piped with --password-stdin', async () => {
    const created = await tollgate(
      [
        'users',
        'create',
        '--org',
        orgId,
        '--name',
        'Ada',
        '--email',
        'ada@example.com',
        '--role',
        'admin',
        '--password-stdin',
        '--json',
      ],
      env(),
      `${PASSWORD}\n`,
    );
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.json).toMatchObject({
      name: 'Ada',
      email: 'ada@example.com',
      role: 'admin',
      org_id: orgId,
      platform_admin: false,
    });
    const userId: string = created.json.id;
    // One trailing newline is trimmed, nothing else.
    expect(await passwordOf(userId, PASSWORD)).toBe(true);

    const human = await tollgate(
      [
        'users',
        'create',
        '--org',
        orgId,
        '--name',
        'Grace',
        '--email',
        'grace@example.com',
        '--platform-admin',
        '--password-stdin',
      ],
      env(),
      'another password 1',
    );
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(
      /^Created user usr_\S+ "Grace" <grace@example.com>, member of \S+, platform admin\.\n$/,
    );

    const listed = await gw.tollgate(['users', 'list', '--org', orgId, '--json']);
    expect(listed.json).toMatchObject({
      object: 'list',
      data: [created.json, expect.objectContaining({ name: 'Grace', role: 'member', platform_admin: true })],
    });
    const table = await gw.tollgate(['users', 'list', '--org', orgId]);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+EMAIL\s+ROLE\s+PLATFORM ADMIN\s+CREATED\n/);
    expect(table.stdout).toMatch(
      new RegExp(`${userId}\\s+Ada\\s+ada@example.com\\s+admin\\s+no\\s+\\d{4}-\\d\\d-\\d\\d`),
    );
    expect((await gw.tollgate(['users', 'list', '--json'])).json.data.map((u: { id: string }) => u.id)).toContain(
      userId,
    );

    const shown = await gw.tollgate(['users', 'get', userId]);
    expect(shown.stdout).toContain(`id:              ${userId}`);
    expect(shown.stdout).toContain('platform admin:  no');
    expect((await gw.tollgate(['users', 'get', userId, '--json'])).json).toEqual(created.json);

    const updated = await gw.tollgate([
      'users',
      'update',
      userId,
      '--name',
      'Ada L.',
      '--role',
      'member',
      '--platform-admin',
      'true',
      '--json',
    ]);
    expect(updated.json).toMatchObject({
      id: userId,
      name: 'Ada L.',
      role: 'member',
      platform_admin: true,
      email: 'ada@example.com',
    });
    expect(await passwordOf(userId, PASSWORD)).toBe(true);
    const repassworded = await tollgate(
      ['users', 'update', userId, '--password-stdin', '--json'],
      env(),
      'a new password\r\n',
    );
    expect(repassworded).toMatchObject({ code: 0, stderr: '' });
    expect(await passwordOf(userId, 'a new password')).toBe(true);

    const deleted = await gw.tollgate(['users', 'delete', userId]);
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted user ${userId}\n`, stderr: '' });
    expect(await gw.tollgate(['users', 'get', userId])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('(not_found)'),
    });
    const graceId = listed.json.data[1].id;
    // 204 No Content: --json prints nothing.
    expect(await gw.tollgate(['users', 'delete', graceId, '--json'])).toMatchObject({
      code: 0,
      stdout: '',
      stderr: '',
    });
  }, 60_000);

  it('refuses a password as an argument, and asks for --password-stdin when stdin is not a terminal (exit 2)', async () => {
    // A gateway nobody answers at: exit 2 (not 1) proves nothing was sent.
    const offline = { TOLLGATE_URL: 'http://127.0.0.1:1', TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN };
    const create = ['users', 'create', '--org', orgId, '--name', 'Eve', '--email', 'eve@example.com'];
    const runs = await Promise.all([
      tollgate([...create, '--password', 'hunter2-secret'], offline, ''),
      tollgate([...create, '--password=hunter2-secret', '--password-stdin'], offline, 'x'),
      tollgate(['users', 'update', 'usr_1', '--password', 'hunter2-secret'], offline, ''),
      tollgate(create, offline, `${PASSWORD}\n`),
      tollgate([...create, '--password-stdin'], offline, '\n'),
      tollgate([...create, '--role', 'boss', '--password-stdin'], offline, PASSWORD),
    ]);
    const messages = [
      '--password is not accepted',
      '--password is not accepted',
      '--password is not accepted',
      'pipe it in with --password-stdin',
      'standard input held no password',
      '--role must be one of owner, admin, member',
    ];
    runs.forEach((run, i) => {
      expect(run.code, messages[i]).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(messages[i]);
      expect(run.stderr).toMatch(/\nusage: tollgate users (create|update) /);
      expect(run.stderr).not.toContain('hunter2');
    });
    expect(
      (await gw.tollgate(['users', 'list', '--org', orgId, '--json'])).json.data.map((u: { name: string }) => u.name),
    ).not.toContain('Eve');
  }, 60_000);

  it('asks for the password twice on a terminal, showing neither', async () => {
    const args = [
      'users',
      'create',
      '--org',
      orgId,
      '--name',
      'Tty',
      '--email',
      'tty@example.com',
      '--json',
      '--url',
      gw.url,
      '--token',
      ADMIN_TOKEN,
    ];
    const run = await inTerminal(args, `${PASSWORD}\n${PASSWORD}\n`);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('Password: \nConfirm password: \n');
    const user = JSON.parse(run.stdout) as { id: string; name: string };
    expect(user.name).toBe('Tty');
    expect(await passwordOf(user.id, PASSWORD)).toBe(true);

    const mismatch = await inTerminal(
      [...args.slice(0, 7), 'tty2@example.com', ...args.slice(8)],
      `${PASSWORD}\nsomething else\n`,
    );
    expect(mismatch.code).toBe(1);
    expect(mismatch.stderr).toBe(
      'Password: \nConfirm password: \nerror: the passwords do not match; nothing was sent\n',
    );
    const ended = await inTerminal(
      ['users', 'update', user.id, '--password-stdin', '--url', gw.url, '--token', ADMIN_TOKEN],
      `${PASSWORD}\n`,
    );
    expect(ended).toMatchObject({
      code: 1,
      stderr: 'Password: \nConfirm password: \nerror: no answer: standard input ended\n',
    });
  });

  it('issues a key acting as a given user with keys create --user', async () => {
    const user = await tollgate(
      ['users', 'create', '--org', orgId, '--name', 'Bot', '--email', 'bot@example.com', '--password-stdin', '--json'],
      env(),
      PASSWORD,
    );
    const created = await gw.tollgate([
      'keys',
      'create',
      '--org',
      orgId,
      '--name',
      'bot',
      '--user',
      user.json.id,
      '--json',
    ]);
    expect(created.json).toMatchObject({ object: 'api_key', org_id: orgId, user_id: user.json.id });
    const human = await gw.tollgate(['keys', 'create', '--org', orgId, '--name', 'bot 2', '--user', user.json.id]);
    expect(human.stdout).toMatch(new RegExp(`\\nuser:\\s+${user.json.id}\\n`));
    expect(
      (await gw.tollgate(['keys', 'create', '--org', orgId, '--name', 'nobody', '--user', 'usr_missing'])).code,
    ).toBe(1);
  });

  it('lists the models an API key can call with their prices: tollgate models', async () => {
    const chat = 'Qwen/Qwen2.5-7B-Instruct';
    await gw.tollgate([
      'models',
      'add',
      '--id',
      chat,
      '--name',
      'qwen-7b',
      '--hf-repo',
      chat,
      '--task',
      'chat',
      '--context-length',
      '32768',
    ]);
    await gw.tollgate([
      'models',
      'add',
      '--id',
      'bge-small',
      '--name',
      'bge',
      '--hf-repo',
      'BAAI/bge-small-en-v1.5',
      '--task',
      'embedding',
      '--context-length',
      '512',
    ]);
    await gw.tollgate([
      'models',
      'add',
      '--id',
      'off',
      '--name',
      'off',
      '--hf-repo',
      'x/off',
      '--task',
      'chat',
      '--context-length',
      '512',
    ]);
    await gw.tollgate(['models', 'disable', 'off']);
    await gw.tollgate(['prices', 'set', '--model', chat, '--input', '0.15', '--output', '0.60']);
    const key = (await gw.tollgate(['keys', 'create', '--org', orgId, '--name', 'models', '--json'])).json
      .secret as string;

    // No operator token is needed, nor used: a wrong one in the environment changes nothing.
    const keyEnv = { TOLLGATE_ADMIN_TOKEN: 'wrong-token-wrong-token' };
    const text = await gw.tollgate(['models', '--api-key', key], keyEnv);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout.split('\n')[0]).toMatch(/^ID\s+TASK\s+INPUT \/ 1M\s+CACHED INPUT \/ 1M\s+OUTPUT \/ 1M$/);
    expect(text.stdout).toMatch(/Qwen\/Qwen2\.5-7B-Instruct\s+chat\s+0\.15 USD\s+0\.15 USD\s+0\.60 USD\n/);
    expect(text.stdout).toMatch(/bge-small\s+embedding\s+no price\s+no price\s+no price\n/);
    expect(text.stdout).not.toMatch(/^off\s/m);

    const json = await gw.tollgate(['--json', 'models', '--api-key', key], keyEnv);
    expect(json.json).toEqual({
      object: 'list',
      currency: 'USD',
      data: expect.arrayContaining([
        expect.objectContaining({
          id: chat,
          object: 'model',
          task_type: 'chat',
          price: {
            input_per_million_tokens: '0.15',
            cached_input_per_million_tokens: '0.15',
            output_per_million_tokens: '0.60',
            currency: 'USD',
          },
        }),
        expect.objectContaining({ id: 'bge-small', task_type: 'embedding', price: null }),
      ]),
    });
    expect(json.json.data).toHaveLength(2);

    const fromEnv = await gw.tollgate(['models', '--json'], { ...keyEnv, TOLLGATE_API_KEY: key });
    expect(fromEnv.json).toEqual(json.json);

    expect(await gw.tollgate(['models'], keyEnv)).toMatchObject({
      code: 2,
      stdout: '',
      stderr: expect.stringContaining('pass --api-key KEY or set TOLLGATE_API_KEY'),
    });
    expect(await gw.tollgate(['models', '--api-key', 'sk-gw-wrong'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('(unauthorized)'),
    });
    // The operator subcommands are untouched.
    expect((await gw.tollgate(['models', 'list', '--all', '--json'])).json.data).toHaveLength(3);
  }, 60_000);
});
