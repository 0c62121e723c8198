import type { ApiErrorEnvelope } from '../../../src/surfaces/api/errors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/shared/http/log.js';
import { limitsEnv, startTestGateway, oneStoreAndLimits, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisWindowCount, uniqueRedisPrefix } from '../../helpers/services.js';
import { apiAs, orgWithUsers, signIn, withCookie } from './harness.js';

const cases = await oneStoreAndLimits();

describe.each(cases)('sign-in sessions ($store, limits in $limits)', ({ store, limits }) => {
  let gateway: TestGateway;
  const logLines: string[] = [];
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    // A real (if low) scrypt cost, so an unknown email's decoy check costs measurable time;
    // 127.0.0.1 is a trusted proxy here.
    const env = { TOLLGATE_PASSWORD_COST: '13', TOLLGATE_TRUSTED_PROXIES: '127.0.0.1', ...limitsEnv(limits, prefix) };
    gateway = await startTestGateway(store, env, { log: createLogger('debug', (line) => logLines.push(line)) });
  });
  afterAll(async () => {
    await gateway?.close();
    if (limits === 'redis') await deleteRedisPrefix(prefix);
  });

  /**
   * With the limits in Redis, checks that Redis holds `count` under `key`: the lock came from
   * there, not from this process.
   */
  const expectCountInRedis = async (key: string, count: number) => {
    if (limits === 'redis') expect(await redisWindowCount(prefix, key), key).toBe(count);
  };

  it('sets a host-only, HttpOnly, SameSite=Lax session cookie; over HTTPS named __Host- and Secure', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const plain = await signIn(gateway, users[0]!.email, users[0]!.password);
    expect(plain.status).toBe(200);
    expect(plain.body.user).toMatchObject({ id: users[0]!.id, email: users[0]!.email, role: 'owner' });
    const attributes = plain.setCookie!.split(';').map((part) => part.trim().toLowerCase());
    expect(attributes[0]).toMatch(/^tollgate_session=[a-z0-9_-]{43}$/);
    expect(attributes).toContain('httponly');
    expect(attributes).toContain('samesite=lax');
    expect(attributes).toContain('path=/');
    expect(attributes.some((a) => a.startsWith('expires='))).toBe(true);
    expect(attributes).not.toContain('secure');
    expect(attributes.some((a) => a.startsWith('domain='))).toBe(false);
    // Behind a trusted proxy that terminated TLS.
    const https = { 'x-forwarded-proto': 'https' };
    const proxied = await signIn(gateway, users[0]!.email, users[0]!.password, https);
    const secured = proxied.setCookie!.split(';').map((part) => part.trim().toLowerCase());
    expect(secured[0]).toMatch(/^__host-tollgate_session=[a-z0-9_-]{43}$/);
    expect(secured).toEqual(expect.arrayContaining(['secure', 'path=/', 'httponly', 'samesite=lax']));
    expect(secured.some((a) => a.startsWith('domain='))).toBe(false);
    expect((await withCookie(gateway, plain.cookie!, 'GET', '/api/v1/me')).body.id).toBe(users[0]!.id);
    const me = (cookie: string) => fetch(`${gateway.url}/api/v1/me`, { headers: { cookie, ...https } });
    expect((await me(proxied.cookie!)).status).toBe(200);
    // Over HTTPS only the __Host- name is read: a plain-named cookie (which another host may set
    // for a parent domain) is nobody.
    expect((await me(plain.cookie!)).status).toBe(401);
  });

  it('answers a wrong password and an unknown email alike, after the same work', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const timed = async (email: string) => {
      const started = performance.now();
      const answer = await signIn(gateway, email, 'not-the-password-at-all');
      return { ...answer, ms: performance.now() - started };
    };
    const wrong: Array<Awaited<ReturnType<typeof timed>>> = [];
    const unknown: Array<Awaited<ReturnType<typeof timed>>> = [];
    for (let i = 0; i < 3; i++) {
      wrong.push(await timed(users[0]!.email));
      unknown.push(await timed(`nobody-${i}-${Date.now()}@example.com`));
    }
    for (const answer of [...wrong, ...unknown]) {
      expect(answer.status).toBe(401);
      expect(answer.cookie).toBeNull();
      expect(answer.body).toEqual({
        error: { code: 'UNAUTHORIZED', message: 'The email or the password is wrong.', details: [] },
      });
    }
    // Both check a password hash: an unknown email is not answered faster. Against the fastest
    // wrong password, not its median: a slow moment of a loaded machine only ever adds time.
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
    expect(median(unknown.map((a) => a.ms))).toBeGreaterThan(Math.min(...wrong.map((a) => a.ms)) * 0.4);
  });

  it('limits failed sign-ins per email, known or not: even the right password waits', async () => {
    const { users } = await orgWithUsers(gateway, ['member']);
    const user = users[0]!;
    for (let i = 0; i < 5; i++) expect((await signIn(gateway, user.email, 'wrong-password-here')).status).toBe(401);
    const blocked = await fetch(`${gateway.url}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email, password: user.password }),
    });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await blocked.json()) as ApiErrorEnvelope).error.code).toBe('RATE_LIMITED');
    const ghost = `ghost-${Date.now()}@example.com`;
    for (let i = 0; i < 5; i++) expect((await signIn(gateway, ghost, 'wrong-password-here')).status).toBe(401);
    expect((await signIn(gateway, ghost, 'wrong-password-here')).status).toBe(429);
    await expectCountInRedis(`signin:email:${user.email}`, 5);
    await expectCountInRedis(`signin:email:${ghost}`, 5);
  });

  it('one email, one counter: another spelling of a locked email is locked too, or names nobody', async () => {
    const { orgId } = await orgWithUsers(gateway, ['owner']);
    const tag = Math.random().toString(36).slice(2, 8);
    const email = `mini.victim-${tag}@example.com`;
    const password = 'the-right-password-0123';
    await gateway.services.users.create({ orgId, name: 'Victim', email, password });
    // Its own client address, so the per-address count of other tests does not interfere.
    const from = { 'x-forwarded-for': '203.0.113.20' };
    for (let i = 0; i < 5; i++) expect((await signIn(gateway, email, 'wrong-password-here', from)).status).toBe(401);
    // Spellings that normalize to the same address share its counter: locked, even with the right
    // password.
    for (const spelling of [email.toUpperCase(), `\uFF4D${email.slice(1)}`, ` ${email.replace('mini', 'MINI')} `]) {
      expect((await signIn(gateway, spelling, password, from)).status).toBe(429);
    }
    // U+0130 (İ) lower-cases to i + a combining dot: another address, which is nobody's, whatever
    // the store's locale.
    const dotted = await signIn(gateway, email.replace('mini', 'm\u0130ni'), password, from);
    expect(dotted.status).toBe(401);
    expect(dotted.cookie).toBeNull();
    await expectCountInRedis(`signin:email:${email}`, 5);
  });

  it('stores an email normalized: another spelling of a taken one is taken, one that is no email after normalizing is refused', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const owner = apiAs(gateway, users[0]!.key);
    const tag = Math.random().toString(36).slice(2, 8);
    const made = await owner('POST', '/users', {
      name: 'Ada',
      email: ` \uFF21da.${tag}@Example.COM `,
      password: 'a-fine-password-1',
    });
    expect(made.status).toBe(201);
    expect(made.body.email).toBe(`ada.${tag}@example.com`);
    const again = await owner('POST', '/users', {
      name: 'Ada again',
      email: `ADA.${tag}@EXAMPLE.COM`,
      password: 'a-fine-password-1',
    });
    expect(again.status).toBe(409);
    const dotted = await owner('POST', '/users', {
      name: 'Dotted',
      email: `\u0130da.${tag}@example.com`,
      password: 'a-fine-password-1',
    });
    expect(dotted.status).toBe(400);
    expect(dotted.body.error.details).toEqual([{ field: 'email', message: 'Must be an email address.' }]);
    // The right password with the stored spelling, or any spelling that normalizes to it, signs in.
    const signedIn = await signIn(gateway, `ａｄａ.${tag}@example.com`, 'a-fine-password-1', {
      'x-forwarded-for': '203.0.113.21',
    });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.user.email).toBe(`ada.${tag}@example.com`);
  });

  it('a signed-out session is dead, and a made-up one never lived', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const session = await signIn(gateway, users[0]!.email, users[0]!.password);
    expect((await withCookie(gateway, session.cookie!, 'GET', '/api/v1/me')).status).toBe(200);
    const out = await fetch(`${gateway.url}/auth/sign-out`, { method: 'POST', headers: { cookie: session.cookie! } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(/^tollgate_session=;.*Max-Age=0/i);
    const after = await withCookie(gateway, session.cookie!, 'GET', '/api/v1/me');
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('UNAUTHORIZED');
    expect((await withCookie(gateway, `tollgate_session=${'A'.repeat(43)}`, 'GET', '/api/v1/me')).status).toBe(401);
  });

  it('refuses a malformed sign-in with every bad field named', async () => {
    const response = await fetch(`${gateway.url}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: '', password: 'x'.repeat(200), remember: true }),
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as ApiErrorEnvelope;
    expect(error.code).toBe('VALIDATION_ERROR');
    expect(error.details.map((d: { field: string }) => d.field).sort()).toEqual(['email', 'password', 'remember']);
  });

  it('logs no password, hash or session id', async () => {
    const marker = 'Marker-Password-7f3a9c';
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const created = await api('POST', '/users', {
      name: 'Logged',
      email: `logged-${Date.now()}@example.com`,
      password: marker,
    });
    expect(created.status).toBe(201);
    const session = await signIn(gateway, created.body.email, marker);
    expect(session.status).toBe(200);
    await signIn(gateway, created.body.email, `${marker}-wrong`);
    await withCookie(gateway, session.cookie!, 'PUT', `/api/v1/users/${created.body.id}`, {
      password: `${marker}-new`,
      current_password: marker,
    });
    // A request that fails inside the server logs its error: still nothing secret.
    await api('POST', '/users', `{"name":"x","email":"broken@example.com","password":"${marker}"`);
    const hash = (await gateway.services.users.get(created.body.id)).passwordHash;
    const sessionId = session.cookie!.split('=')[1]!;
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toContain(marker);
      expect(line).not.toContain(hash.split('$')[5]!);
      expect(line).not.toContain(sessionId);
    }
  });

  it('counts requests without credentials per client address: X-Forwarded-For from a trusted proxy', async () => {
    const remaining = async (forwardedFor: string) =>
      Number(
        (await fetch(`${gateway.url}/api/v1/users`, { headers: { 'x-forwarded-for': forwardedFor } })).headers.get(
          'x-ratelimit-remaining',
        ),
      );
    // 127.0.0.1 is trusted here: each forwarded address has a count of its own.
    const first = await remaining('203.0.113.7');
    expect(await remaining('203.0.113.7')).toBe(first - 1);
    expect(await remaining('198.51.100.23')).toBe(99);
  });

  it("takes bodies only as JSON where a session cookie reaches: another site's form cannot post with it", async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const session = await signIn(gateway, users[0]!.email, users[0]!.password);
    const form = (path: string, headers: Record<string, string>) =>
      fetch(`${gateway.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: JSON.stringify({ name: 'csrf', email: users[0]!.email, password: users[0]!.password }),
      });
    for (const response of [
      await form('/api/v1/projects', { cookie: session.cookie! }),
      await form('/auth/sign-in', {}),
    ]) {
      expect(response.status).toBe(415);
      expect(((await response.json()) as ApiErrorEnvelope).error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'content-type' }],
      });
    }
    expect((await apiAs(gateway, users[0]!.key)('GET', '/projects')).body.pagination.total).toBe(0);
  });
});
