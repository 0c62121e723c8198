import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { sleep, until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import { apiAs, orgWithUsers, signIn, type TestUser } from './harness.js';

const stores = await availableStores();

const packageOf = (name: string) =>
  zipOf({ 'manifest.json': JSON.stringify({ name, title: `The ${name} stack` }), 'main.tf': '# a module' });

/** A multipart body with the package, as a browser or SDK sends it. */
async function multipart(zip: Buffer): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'stack.zip');
  const request = new Request('http://127.0.0.1/', { method: 'POST', body: form });
  return { body: Buffer.from(await request.arrayBuffer()), type: request.headers.get('content-type')! };
}

/**
 * Stack uploads are bounded: in flight per process and per user (each holds
 * tens of MiB while it is read: 12 at once took a gateway from 269 to 1,156
 * MiB), and in number kept per user.
 */
describe.each(stores)('stack uploads are bounded (%s)', (store) => {
  let gateway: TestGateway;
  let alice: TestUser;
  let bob: TestUser;
  let carol: TestUser;
  let admin: TestUser;

  beforeAll(async () => {
    gateway = await startTestGateway(store, {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_UPLOADS_IN_FLIGHT: '2',
      TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER: '1',
      TOLLGATE_STACKS_PER_USER: '2',
    });
    [alice, bob, carol] = (await orgWithUsers(gateway, ['owner', 'member', 'member'])).users as [
      TestUser,
      TestUser,
      TestUser,
    ];
    admin = (await orgWithUsers(gateway, ['owner'], { platformAdmin: true })).users[0]!;
  });
  afterAll(() => gateway?.close());

  async function upload(key: string, zip: Buffer) {
    const { body, type } = await multipart(zip);
    const response = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': type },
      body,
    });
    return {
      status: response.status,
      body: (await response.json()) as any,
      retryAfter: response.headers.get('retry-after'),
    };
  }

  /** An upload whose body arrives in two halves: it holds its slot until `finish` sends the second. */
  async function slowUpload(key: string, zip: Buffer) {
    const { body, type } = await multipart(zip);
    const request = http.request(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': type, 'content-length': String(body.length) },
    });
    const answered = new Promise<{ status: number }>((resolve, reject) => {
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode! }));
      });
      request.on('error', reject);
    });
    request.write(body.subarray(0, body.length >> 1));
    return {
      finish() {
        request.end(body.subarray(body.length >> 1));
        return answered;
      },
    };
  }

  /** Waits until the gateway is reading `count` uploads. */
  async function reading(count: number): Promise<void> {
    await until(`the gateway reads ${count} uploads`, () => gateway.services.uploads.inFlight === count, {
      timeout: 5_000,
      interval: 10,
      detail: () => `it reads ${gateway.services.uploads.inFlight}`,
    });
  }

  it('reads one upload per user and two in all at once; the next waits with Retry-After, and goes through once one ends', async () => {
    const first = await slowUpload(alice.key, await packageOf('alice-one'));
    await reading(1);
    const again = await upload(alice.key, await packageOf('alice-again'));
    expect(again.status).toBe(429);
    expect(again.body.error).toMatchObject({ code: 'RATE_LIMITED', details: [] });
    expect(again.retryAfter).toMatch(/^\d+$/);
    // By URL too: the download is held in memory the same way.
    expect((await apiAs(gateway, alice.key)('POST', '/stacks', { url: 'https://example.com/x.zip' })).status).toBe(429);

    const second = await slowUpload(bob.key, await packageOf('bobs'));
    await reading(2);
    const busy = await upload(carol.key, await packageOf('carols'));
    expect(busy.status).toBe(503);
    expect(busy.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: [] });
    expect(busy.retryAfter).toMatch(/^\d+$/);

    expect((await first.finish()).status).toBe(201);
    expect((await second.finish()).status).toBe(201);
    await reading(0);
    expect((await upload(carol.key, await packageOf('carols'))).status).toBe(201);
    // A refused package gives its slot back as well.
    expect((await upload(carol.key, await zipOf({ 'README.md': 'no module' }))).status).toBe(400);
    await reading(0);
  });

  it('answers a refused upload whose body is still arriving: its body is read and discarded first, the 429 closes the connection', async () => {
    const held = await slowUpload(alice.key, await packageOf('alice-held'));
    await reading(1);
    const { body, type } = await multipart(await packageOf('alice-trickle'));
    // The body arrives over about 2 s, as a large upload over a slow link does: the server must not
    // close the socket under the client (Hono's node server drains an unread body for only 500 ms
    // before it does).
    const padded = Buffer.concat([body, Buffer.alloc(20 * 64 * 1024 - body.length)]);
    let sent = 0;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= padded.length) return controller.close();
        await sleep(100); // the subject: a body that arrives slowly
        controller.enqueue(new Uint8Array(padded.subarray(sent, sent + 64 * 1024)));
        sent += 64 * 1024;
      },
    });
    const answer = await fetch(`${gateway.url}/api/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': type },
      body: trickle,
      duplex: 'half',
    }).then(
      async (response) => ({
        // Read whole before the answer: what was sent when it came.
        sentWhenAnswered: sent,
        status: response.status,
        connection: response.headers.get('connection'),
        message: ((await response.json()) as { error: { message: string } }).error.message,
      }),
      (error: Error) => ({
        status: 0,
        connection: null,
        message: (error.cause as Error | undefined)?.message ?? error.message,
      }),
    );
    expect(answer).toMatchObject({ status: 429, connection: 'close', sentWhenAnswered: padded.length });
    expect(answer.message).toContain('TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER');
    expect((await held.finish()).status).toBe(201);
    await reading(0);
    expect((await apiAs(gateway, alice.key)('DELETE', '/stacks/alice-held')).status).toBe(204);
  });

  it("takes the portal's upload form in the same slots", async () => {
    const session = await signIn(gateway, bob.email, bob.password);
    const page = await (await fetch(`${gateway.url}/portal/stacks`, { headers: { cookie: session.cookie! } })).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const held = await slowUpload(bob.key, await packageOf('bobs-held'));
    await reading(1);
    const form = new FormData();
    form.set('_csrf', token);
    form.set(
      'package',
      new Blob([new Uint8Array(await packageOf('bobs-form'))], { type: 'application/zip' }),
      'stack.zip',
    );
    const refused = await fetch(`${gateway.url}/portal/stacks/upload`, {
      method: 'POST',
      headers: { cookie: session.cookie!, origin: gateway.url },
      body: form,
      redirect: 'manual',
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.text()).toContain('wait for one to finish');
    expect((await held.finish()).status).toBe(201);
    await reading(0);
  });

  it('keeps at most TOLLGATE_STACKS_PER_USER private stacks per user: the next is a 409 saying why, until one is deleted', async () => {
    // Alice has one from the first test.
    expect((await upload(alice.key, await packageOf('alice-two'))).status).toBe(201);
    const over = await upload(alice.key, await packageOf('alice-three'));
    expect(over.status).toBe(409);
    expect(over.body.error).toMatchObject({
      code: 'CONFLICT',
      details: [{ field: 'package', message: 'At most 2 stacks per user.' }],
    });
    expect(over.body.error.message).toMatch(/delete one/);
    expect((await apiAs(gateway, alice.key)('DELETE', '/stacks/alice-one')).status).toBe(204);
    expect((await upload(alice.key, await packageOf('alice-three'))).status).toBe(201);
    // Platform admins curate the global catalog: no bound.
    for (const name of ['global-a', 'global-b', 'global-c'])
      expect((await upload(admin.key, await packageOf(name))).status).toBe(201);
  });

  it('takes the large limit for an upload only: a 300 KiB PATCH, which takes no slot, is a 413 like any management body', async () => {
    const patch = await apiAs(gateway, carol.key)('PATCH', '/stacks/carols', { description: 'x'.repeat(300 * 1024) });
    expect(patch.status).toBe(413);
    expect(patch.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(patch.headers.get('connection')).toBe('close');
    // The upload itself still has room for a package above the management limit.
    const big = await zipOf({
      'manifest.json': JSON.stringify({ name: 'carols-big', title: 'Big' }),
      'main.tf': '# a module',
      'data.txt': randomBytes(400 * 1024).toString('base64'),
    });
    expect(big.length).toBeGreaterThan(300 * 1024);
    expect((await upload(admin.key, big)).status).toBe(201);
  });
});
