import type { Role } from '../../../src/shared/db/schema.js';
import type { TestGateway } from '../../helpers/gateway.js';

/** Test passwords: long enough for the rules, distinct per user. */
export const passwordOf = (email: string) => `pw-${email}-0123456789`;

export interface TestUser {
  id: string;
  email: string;
  password: string;
  /** An API key acting as this user (the first five users of an organization; '' for the rest). */
  key: string;
}

/**
 * An organization with users of the given roles, each with a key, made
 * through the services (as the operator would); emails are unique per call.
 */
export async function orgWithUsers(
  gateway: TestGateway,
  roles: Role[],
  options: { platformAdmin?: boolean } = {},
): Promise<{ orgId: string; users: TestUser[] }> {
  const { orgs, users, keys } = gateway.services;
  const org = await orgs.create('people test org');
  const tag = Math.random().toString(36).slice(2, 8);
  const made: TestUser[] = [];
  for (const [index, role] of roles.entries()) {
    const email = `${role}${index}-${tag}@example.com`;
    const user = await users.create({
      orgId: org.id,
      name: `${role} ${index}`,
      email,
      password: passwordOf(email),
      role,
      platformAdmin: options.platformAdmin && index === 0,
    });
    // An organization holds at most five keys: the first five users get one.
    const secret =
      index < 5
        ? (await keys.create({ orgId: org.id, userId: user.id, name: `${role} key`, requestsPerMinute: 100_000 }))
            .secret
        : '';
    made.push({ id: user.id, email, password: passwordOf(email), key: secret });
  }
  return { orgId: org.id, users: made };
}

/** A fetch of the generic API (under `/api/v1`) as a key's user. */
export function apiAs(gateway: TestGateway, key: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: any; headers: Headers }> => {
    const response = await fetch(`${gateway.url}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
  };
}

/** Signs in; returns the session cookie (`name=value`) and the Set-Cookie header. */
export async function signIn(
  gateway: TestGateway,
  email: string,
  password: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; cookie: string | null; setCookie: string | null; body: any }> {
  const response = await fetch(`${gateway.url}/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ email, password }),
  });
  const setCookie = response.headers.get('set-cookie');
  return { status: response.status, cookie: setCookie?.split(';')[0] ?? null, setCookie, body: await response.json() };
}

/** A fetch with a session cookie. */
export async function withCookie(
  gateway: TestGateway,
  cookie: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
