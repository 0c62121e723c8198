import type { ApiErrorEnvelope } from '../../../src/surfaces/api/errors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGEMENT_MAX_BODY_BYTES } from '../../../src/shared/http/request.js';
import { limitsEnv, startTestGateway, oneStoreAndLimits, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisWindowCount, uniqueRedisPrefix } from '../../helpers/services.js';
import { apiAs, orgWithUsers, signIn, type TestUser } from './harness.js';

const cases = await oneStoreAndLimits();

/**
 * What the probe of issue 20 found on the generic API: a session's change
 * sent from a page elsewhere (no Content-Type at all, or no body), a key
 * that acts as nobody never limited, and a 413 or 404 without the limit headers.
 */
describe.each(cases)('generic API under a hostile caller ($store, limits in $limits)', ({ store, limits }) => {
  let gateway: TestGateway;
  let owner: TestUser;
  let cookie: string;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    // 127.0.0.1 is a trusted proxy here: each test counts under an X-Forwarded-For address of its
    // own.
    gateway = await startTestGateway(store, {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_TRUSTED_PROXIES: 'loopback',
      ...limitsEnv(limits, prefix),
    });
    owner = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    cookie = (await signIn(gateway, owner.email, owner.password)).cookie!;
  });
  afterAll(async () => {
    await gateway?.close();
    if (limits === 'redis') await deleteRedisPrefix(prefix);
  });

  /**
   * With the limits in Redis, checks that Redis holds `count` under `key`: the headers came from
   * there, not from this process.
   */
  const expectCountInRedis = async (key: string, count: number) => {
    if (limits === 'redis') expect(await redisWindowCount(prefix, key), key).toBe(count);
  };

  const stackCount = async () =>
    (await apiAs(gateway, owner.key)('GET', '/stacks?limit=100')).body.pagination.total as number;

  it("refuses a session's POST /v1/stacks without a Content-Type: 403 from another site, 415 from this one", async () => {
    const before = await stackCount();
    // A no-cors fetch with a Blob body: the browser sends no Content-Type at all.
    const post = (origin: string) =>
      fetch(`${gateway.url}/v1/stacks`, {
        method: 'POST',
        headers: { cookie, origin },
        body: new Blob([JSON.stringify({ url: 'https://example.com/stack.zip' })]),
      });
    const forged = await post('https://evil.example');
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as ApiErrorEnvelope).error.code).toBe('FORBIDDEN');
    const untyped = await post(gateway.url);
    expect(untyped.status).toBe(415);
    expect(((await untyped.json()) as ApiErrorEnvelope).error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [{ field: 'content-type' }],
    });
    // A key's untyped body is refused the same way: the rule is the body's, not the caller's.
    const keyed = await fetch(`${gateway.url}/v1/stacks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.key}` },
      body: new Blob([JSON.stringify({ url: 'https://example.com/x.zip' })]),
    });
    expect(keyed.status).toBe(415);
    expect(await stackCount()).toBe(before);
  });

  it('refuses every change a session sends from another page, with or without a body, and takes its own', async () => {
    const project = (await apiAs(gateway, owner.key)('POST', '/projects', { name: 'kept' })).body as { id: string };
    const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
      fetch(`${gateway.url}${path}`, {
        method,
        headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body,
      });
    for (const [method, path, body] of [
      ['POST', '/v1/runs/run_doesnotexist/cancel', undefined],
      ['DELETE', `/api/v1/projects/${project.id}`, undefined],
      ['PUT', `/api/v1/projects/${project.id}`, JSON.stringify({ name: 'taken over' })],
      ['POST', '/api/v1/projects', JSON.stringify({ name: 'planted' })],
    ] as const) {
      for (const elsewhere of <Record<string, string>[]>[
        { origin: 'https://evil.example' },
        { 'sec-fetch-site': 'same-site' },
        { 'sec-fetch-site': 'cross-site', origin: 'null' },
      ]) {
        const response = await send(method, path, elsewhere, body);
        expect(response.status, `${method} ${path} ${JSON.stringify(elsewhere)}`).toBe(403);
        expect(((await response.json()) as ApiErrorEnvelope).error.code).toBe('FORBIDDEN');
      }
    }
    const names = async () =>
      ((await apiAs(gateway, owner.key)('GET', '/projects?limit=100')).body.data as Array<{ name: string }>).map(
        (p) => p.name,
      );
    expect(await names()).toEqual(['kept']);
    // Signing out is a change too: another site cannot end the session.
    expect((await send('POST', '/auth/sign-out', { origin: 'https://evil.example' })).status).toBe(403);
    expect((await send('GET', '/api/v1/me', {})).status).toBe(200);
    // The portal's own pages (same origin, or the browser saying so) and non-browser clients still
    // may.
    expect(
      (await send('POST', '/api/v1/projects', { origin: gateway.url }, JSON.stringify({ name: 'from here' }))).status,
    ).toBe(201);
    expect(
      (
        await send(
          'POST',
          '/api/v1/projects',
          { 'sec-fetch-site': 'same-origin' },
          JSON.stringify({ name: 'same origin' }),
        )
      ).status,
    ).toBe(201);
    expect((await send('POST', '/api/v1/projects', {}, JSON.stringify({ name: 'curl' }))).status).toBe(201);
    expect((await send('DELETE', `/api/v1/projects/${project.id}`, { origin: gateway.url })).status).toBe(204);
  });

  it('counts a key that acts as nobody against the client address: limit headers, then 429', async () => {
    // A key made before its organization had any user acts as nobody.
    const { secret } = await gateway.tenant();
    const headers = { authorization: `Bearer ${secret}`, 'x-forwarded-for': '203.0.113.91' };
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let sent = 0; sent < 101; sent += 1) {
      last = await fetch(`${gateway.url}/api/v1/projects`, { headers });
      statuses.push(last.status);
      if (sent === 0) {
        expect(last.headers.get('x-ratelimit-limit')).toBe('100');
        expect(last.headers.get('x-ratelimit-remaining')).toBe('99');
      }
      await last.arrayBuffer();
    }
    expect(statuses.slice(0, 100).every((status) => status === 403)).toBe(true);
    expect(statuses[100]).toBe(429);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    // It is the address's count: a request without credentials from there is over the limit too.
    expect(
      (await fetch(`${gateway.url}/api/v1/projects`, { headers: { 'x-forwarded-for': '203.0.113.91' } })).status,
    ).toBe(429);
    await expectCountInRedis('api:addr:203.0.113.91', 102);
  });

  it('sends the limit headers on a 413 too, counted like any other answer', async () => {
    const api = (body: string) =>
      fetch(`${gateway.url}/api/v1/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
        body,
      });
    const before = Number(
      (await fetch(`${gateway.url}/api/v1/me`, { headers: { authorization: `Bearer ${owner.key}` } })).headers.get(
        'x-ratelimit-remaining',
      ),
    );
    const tooLarge = await api(JSON.stringify({ name: 'x'.repeat(MANAGEMENT_MAX_BODY_BYTES) }));
    expect(tooLarge.status).toBe(413);
    expect(((await tooLarge.json()) as ApiErrorEnvelope).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(tooLarge.headers.get('x-ratelimit-limit')).toBe('1000');
    expect(Number(tooLarge.headers.get('x-ratelimit-remaining'))).toBe(before - 1);
    expect(Number(tooLarge.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    const { id } = await gateway.services.keys.authenticate(`Bearer ${owner.key}`);
    await expectCountInRedis(`api:key:${id}`, 1000 - before + 1);
  });

  it('counts a 404 too: an unknown path or a NUL in one carries the limit headers, and a stranger is counted against the address', async () => {
    const get = (path: string, headers: Record<string, string>) => fetch(`${gateway.url}${path}`, { headers });
    const mine = { authorization: `Bearer ${owner.key}` };
    let remaining = Number((await get('/api/v1/me', mine)).headers.get('x-ratelimit-remaining'));
    for (const path of [
      '/api/v1/no-such-resource',
      '/api/v1/no/such/path',
      '/api/v1/projects/a%00b',
      '/api/v1/a%00b',
    ]) {
      const response = await get(path, mine);
      expect(response.status, path).toBe(404);
      expect(((await response.json()) as ApiErrorEnvelope).error.code, path).toBe('NOT_FOUND');
      expect(response.headers.get('x-ratelimit-limit'), path).toBe('1000');
      remaining -= 1;
      expect(Number(response.headers.get('x-ratelimit-remaining')), path).toBe(remaining);
    }
    // Without credentials: 401 first, as under a resource, counted against the address.
    const stranger = { 'x-forwarded-for': '203.0.113.92' };
    for (const [index, path] of ['/api/v1/no-such-resource', '/api/v1/a%00b'].entries()) {
      const response = await get(path, stranger);
      expect(response.status, path).toBe(401);
      expect(response.headers.get('x-ratelimit-limit'), path).toBe('100');
      expect(response.headers.get('x-ratelimit-remaining'), path).toBe(String(99 - index));
    }
    await expectCountInRedis('api:addr:203.0.113.92', 2);
  });
});
