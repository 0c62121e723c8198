import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers, signIn } from './harness.js';
import { zipOf } from '../../helpers/zip.js';

const stores = await oneStore();

const manifest = (name: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    name,
    title: `The ${name} stack`,
    description: `Runs ${name} on a cluster`,
    category: 'Monitoring',
    ...extra,
  });

describe.each(stores)('generic API: the stack catalog (%s)', (store) => {
  let gateway: TestGateway;
  let admin: { key: string; id: string };
  let alice: { key: string; id: string; email: string; password: string };
  let bob: { key: string; id: string };

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    admin = (await orgWithUsers(gateway, ['owner'], { platformAdmin: true })).users[0]!;
    const people = await orgWithUsers(gateway, ['owner', 'member']);
    alice = people.users[0]!;
    bob = people.users[1]!;
  });
  afterAll(() => gateway?.close());

  async function upload(key: string, zip: Buffer, fileName = 'stack.zip', headers: Record<string, string> = {}) {
    const form = new FormData();
    form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), fileName);
    const response = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: key ? { authorization: `Bearer ${key}`, ...headers } : headers,
      body: form,
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  it('a platform admin adds a global stack; a user adds a private one, seen only by them and admins', async () => {
    const global = await upload(
      admin.key,
      await zipOf({
        'manifest.json': manifest('observability', { icon: '📈' }),
        'main.tf': 'variable "port" { default = 3000 }',
      }),
    );
    expect(global.status).toBe(201);
    expect(global.body).toMatchObject({
      name: 'observability',
      visibility: 'global',
      owner_id: admin.id,
      title: 'The observability stack',
      category: 'Monitoring',
      icon: '📈',
      inputs: [],
    });
    const mine = await upload(
      alice.key,
      await zipOf({
        'torque/main.tf': 'variable "partition" { type = string }',
        'torque/README.md': 'A Torque scheduler.',
      }),
      'whatever.zip',
    );
    expect(mine.status).toBe(201);
    expect(mine.body).toMatchObject({
      name: 'torque',
      visibility: 'private',
      owner_id: alice.id,
      category: 'Custom',
      description: 'A Torque scheduler.',
      inputs: [{ name: 'partition', type: 'string', required: true }],
    });

    const names = async (key: string) =>
      ((await apiAs(gateway, key)('GET', '/stacks?sort=name')).body.data as Array<{ name: string }>).map((s) => s.name);
    // The shipped global stacks (stacks/) are there for everyone too.
    expect(await names(alice.key)).toEqual([
      'k3s',
      'monitoring',
      'observability',
      'ray',
      'slurm',
      'torque',
      'vllm-serving',
    ]);
    expect(await names(bob.key)).toEqual(['k3s', 'monitoring', 'observability', 'ray', 'slurm', 'vllm-serving']);
    expect(await names(admin.key)).toEqual([
      'k3s',
      'monitoring',
      'observability',
      'ray',
      'slurm',
      'torque',
      'vllm-serving',
    ]);
    expect((await apiAs(gateway, bob.key)('GET', '/stacks/torque')).status).toBe(404);
    expect((await apiAs(gateway, bob.key)('GET', '/stacks/observability')).body.name).toBe('observability');
  });

  it("takes a manifest with only the spec's fields, naming the stack as without one, and lists a null default as optional", async () => {
    const spec = JSON.stringify({
      title: 'Batch',
      description: 'A batch scheduler',
      category: 'Scheduler',
      icon: '🗓️',
      inputs: [{ name: 'partition', type: 'string', default: 'main' }],
    });
    const added = await upload(
      alice.key,
      await zipOf({
        'batch-queue/manifest.json': spec,
        'batch-queue/main.tf': 'variable "partition" { default = "main" }',
      }),
      'upload.zip',
    );
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      name: 'batch-queue',
      title: 'Batch',
      category: 'Scheduler',
      icon: '🗓️',
      inputs: [{ name: 'partition', type: 'string', default: 'main' }],
    });
    const derived = await upload(
      alice.key,
      await zipOf({ 'main.tf': 'variable "gpu" {\n  type    = string\n  default = null\n}\n' }),
      'nullable.zip',
    );
    expect(derived.status).toBe(201);
    expect(derived.body.inputs).toEqual([{ name: 'gpu', type: 'string', required: false }]);
  });

  it('searches name, title and description, filters by category, and pages', async () => {
    const api = apiAs(gateway, admin.key);
    for (const name of ['grafana-extra', 'kuberay'])
      await upload(
        admin.key,
        await zipOf({
          'manifest.json': manifest(name, { category: name === 'kuberay' ? 'ML Framework' : 'Monitoring' }),
          'main.tf': '',
        }),
      );
    expect((await api('GET', '/stacks?q=RAY&sort=name')).body.data.map((s: { name: string }) => s.name)).toEqual([
      'kuberay',
      'ray',
    ]);
    expect((await api('GET', '/stacks?q=Runs%20grafana')).body.data.map((s: { name: string }) => s.name)).toEqual([
      'grafana-extra',
    ]);
    expect(
      (await api('GET', '/stacks?category=ML%20Framework&sort=name')).body.data.map((s: { name: string }) => s.name),
    ).toEqual(['kuberay', 'ray', 'vllm-serving']);
    const page = await api('GET', '/stacks?limit=1&page=2&sort=name');
    expect(page.body.pagination).toMatchObject({ page: 2, limit: 1 });
    expect(page.body.data).toHaveLength(1);
    expect((await api('GET', '/stacks?category=Games')).body.error.details).toEqual([
      { field: 'category', message: expect.any(String) },
    ]);
    // A search for % or _ matches them literally.
    expect((await api('GET', '/stacks?q=%25')).body.data).toEqual([]);
  });

  it('downloads the zip it was given: global ones for anyone, private ones for their owner and admins', async () => {
    const zip = await zipOf({ 'manifest.json': manifest('downloadable'), 'main.tf': '# hello' });
    expect((await upload(alice.key, zip)).status).toBe(201);
    const get = (key: string) =>
      fetch(`${gateway.url}/v1/stacks/downloadable/download`, { headers: { authorization: `Bearer ${key}` } });
    const own = await get(alice.key);
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toBe('application/zip');
    expect(Buffer.from(await own.arrayBuffer()).equals(zip)).toBe(true);
    expect((await get(admin.key)).status).toBe(200);
    expect((await get(bob.key)).status).toBe(404);
    expect(
      (
        await fetch(`${gateway.url}/v1/stacks/observability/download`, {
          headers: { authorization: `Bearer ${bob.key}` },
        })
      ).status,
    ).toBe(200);
  });

  it('lets platform admins change and delete any stack, users only their private ones', async () => {
    await upload(alice.key, await zipOf({ 'manifest.json': manifest('alices'), 'main.tf': '' }));
    const asAlice = apiAs(gateway, alice.key);
    expect(
      (
        await asAlice('PATCH', '/stacks/alices', {
          title: "Alice's stack",
          icon: 'https://example.com/icon.png',
          applicable_profiles: ['a100x8'],
        })
      ).body,
    ).toMatchObject({
      title: "Alice's stack",
      icon: 'https://example.com/icon.png',
      applicable_profiles: ['a100x8'],
    });
    expect((await asAlice('PATCH', '/stacks/observability', { title: 'mine now' })).status).toBe(403);
    expect((await asAlice('DELETE', '/stacks/observability')).status).toBe(403);
    expect((await apiAs(gateway, bob.key)('PATCH', '/stacks/alices', { title: 'x' })).status).toBe(404);
    const bad = await asAlice('PATCH', '/stacks/alices', {
      category: 'Games',
      icon: 'http://plain.example/i.png',
      name: 'renamed',
    });
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['category', 'icon', 'name']);
    expect((await apiAs(gateway, admin.key)('PATCH', '/stacks/alices', { description: 'checked' })).status).toBe(200);
    expect((await asAlice('DELETE', '/stacks/alices')).status).toBe(204);
    expect((await asAlice('GET', '/stacks/alices')).status).toBe(404);
  });

  it("scopes private names to their organization: another organization's name is not taken, and a name never means two stacks to one user", async () => {
    const other = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    const zip = async (name: string, description: string) =>
      zipOf({ 'manifest.json': manifest(name, { description }), 'main.tf': '' });
    const name = `scoped-${Math.random().toString(36).slice(2, 8)}`;
    // Alice's organization has a private stack of this name; another organization may add one too:
    // a 409 would tell it that Alice's exists.
    expect((await upload(alice.key, await zip(name, 'alice'))).status).toBe(201);
    const theirs = await upload(other.key, await zip(name, 'theirs'));
    expect(theirs.status).toBe(201);
    expect(theirs.body).toMatchObject({
      name,
      visibility: 'private',
      owner_id: other.id,
      description: 'theirs',
      id: expect.stringMatching(/^stk_[0-9a-f]{32}$/),
    });
    // Each sees their own under the name.
    expect((await apiAs(gateway, alice.key)('GET', `/stacks/${name}`)).body.description).toBe('alice');
    expect((await apiAs(gateway, other.key)('GET', `/stacks/${name}`)).body.description).toBe('theirs');
    // Within an organization a name is one stack: Bob (Alice's organization) may not add another.
    expect((await upload(bob.key, await zip(name, 'bob'))).status).toBe(409);
    // A platform admin sees both: the name is ambiguous to them (409 naming the ids), the id is
    // not.
    const ambiguous = await apiAs(gateway, admin.key)('GET', `/stacks/${name}`);
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error.details[0].message).toContain(theirs.body.id);
    expect((await apiAs(gateway, admin.key)('GET', `/stacks/${theirs.body.id}`)).body.description).toBe('theirs');
    // Another user reaches a private stack by its id no more than by its name.
    expect((await apiAs(gateway, alice.key)('GET', `/stacks/${theirs.body.id}`)).status).toBe(404);
    // A global name is everyone's: no private stack takes it, and no global stack takes a name a
    // private one has.
    expect((await upload(other.key, await zip('observability', 'mine'))).status).toBe(409);
    expect((await upload(admin.key, await zip(name, 'global'))).status).toBe(409);
    // Deleting one organization's stack leaves the other's.
    expect((await apiAs(gateway, other.key)('DELETE', `/stacks/${name}`)).status).toBe(204);
    expect((await apiAs(gateway, alice.key)('GET', `/stacks/${name}`)).body.description).toBe('alice');
    expect((await apiAs(gateway, admin.key)('GET', `/stacks/${name}`)).body.description).toBe('alice');
  });

  it('a global and a private stack added at once under one name: one of them only', async () => {
    for (let round = 0; round < 3; round++) {
      const name = `race-${round}-${Math.random().toString(36).slice(2, 8)}`;
      const zip = await zipOf({ 'manifest.json': manifest(name), 'main.tf': '' });
      const statuses = (await Promise.all([upload(admin.key, zip), upload(alice.key, zip)]))
        .map((answer) => answer.status)
        .sort();
      expect(statuses).toEqual([201, 409]);
    }
  });

  it('refuses a taken name, a bad package (naming the entry), and anything but a multipart upload', async () => {
    const again = await upload(admin.key, await zipOf({ 'manifest.json': manifest('observability'), 'main.tf': '' }));
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', details: [{ field: 'name' }] });
    const noTf = await upload(alice.key, await zipOf({ 'README.md': 'nothing' }));
    expect(noTf.status).toBe(400);
    expect(noTf.body.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'package', message: expect.stringContaining('no .tf file') }],
    });
    const text = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
    const missing = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}` },
      body: new FormData(),
    });
    expect(((await missing.json()) as any).error.details).toEqual([{ field: 'package', message: expect.any(String) }]);
  });

  it("takes a session's upload only from this site", async () => {
    const session = await signIn(gateway, alice.email, alice.password);
    const zip = await zipOf({ 'manifest.json': manifest('from-session'), 'main.tf': '' });
    const forged = await upload('', zip, 'x.zip', { cookie: session.cookie!, origin: 'https://evil.example' });
    expect(forged.status).toBe(403);
    const own = await upload('', zip, 'x.zip', { cookie: session.cookie!, origin: gateway.url });
    expect(own.status).toBe(201);
  });
});

describe('adding a stack by URL', () => {
  let server: Server;
  let base: string;
  let strict: TestGateway;
  let open: TestGateway;
  let key: (gateway: TestGateway) => Promise<string>;

  beforeAll(async () => {
    const zip = await zipOf({ 'manifest.json': manifest('fetched'), 'main.tf': '' });
    server = createServer((request, response) => {
      if (request.url === '/fetched.zip') return response.end(zip);
      if (request.url === '/moved') return response.writeHead(302, { location: '/fetched.zip' }).end();
      if (request.url === '/loop') return response.writeHead(302, { location: '/loop' }).end();
      if (request.url === '/huge') return response.writeHead(200, { 'content-length': String(50 * 1024 * 1024) }).end();
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    strict = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    // Tests reach their own server on 127.0.0.1 over http: both allowances on.
    open = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_STACK_URL_ALLOW_HTTP: 'true',
      TOLLGATE_STACK_URL_ALLOW_PRIVATE: 'true',
    });
    key = async (gateway) => (await orgWithUsers(gateway, ['owner'])).users[0]!.key;
  });
  afterAll(async () => {
    await strict?.close();
    await open?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  const add = async (gateway: TestGateway, secret: string, url: string) =>
    apiAs(gateway, secret)('POST', '/stacks', { url });

  it('refuses http, private and loopback addresses, and other schemes, without the settings', async () => {
    const secret = await key(strict);
    const port = new URL(base).port;
    for (const [url, reason] of [
      [`${base}/fetched.zip`, /Only https URLs/],
      [`https://127.0.0.1:${port}/fetched.zip`, /127\.0\.0\.1 is a private, loopback or link-local address/],
      [`https://localhost:${port}/fetched.zip`, /localhost is a private, loopback or link-local address/],
      ['https://[::1]/x.zip', /::1 is a private/],
      ['https://169.254.169.254/latest/meta-data', /169\.254\.169\.254 is a private/],
      ['ftp://example.com/x.zip', /Only https URLs/],
      ['not a url', /not a URL/],
    ] as const) {
      const answer = await add(strict, secret, url);
      expect(answer.status, url).toBe(400);
      expect(answer.body.error.details, url).toEqual([{ field: 'url', message: expect.stringMatching(reason) }]);
    }
  });

  it('fetches a package with the settings on, following a redirect, within the size and redirect limits', async () => {
    const secret = await key(open);
    const added = await add(open, secret, `${base}/moved`);
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ name: 'fetched', visibility: 'private' });
    expect((await add(open, secret, `${base}/loop`)).body.error.details[0].message).toBe('More than 3 redirects.');
    expect((await add(open, secret, `${base}/huge`)).body.error.details[0].message).toMatch(
      /at most 10485760 are taken/,
    );
    expect((await add(open, secret, `${base}/missing.zip`)).body.error.details[0].message).toBe(
      'The server answered 404.',
    );
  });
});
