import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startAdmin } from './harness.js';

describe('admin API: operator token', () => {
  let h: Awaited<ReturnType<typeof startAdmin>>;
  beforeAll(async () => {
    h = await startAdmin();
  });
  afterAll(() => h.store.close());

  it('refuses a request without a token with 401 and the envelope', async () => {
    const res = await h.app.request('/admin/v1/orgs');
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toMatchObject({
      error: { message: expect.stringContaining('Missing operator token'), type: 'auth_error', code: 'unauthorized' },
    });
  });

  it('refuses a wrong token, a token of another length, and another scheme', async () => {
    for (const authorization of [
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}x`,
      'Bearer short',
      `Basic ${ADMIN_TOKEN}`,
      'Bearer ',
    ]) {
      const res = await h.app.request('/admin/v1/orgs', { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
  });

  it('never echoes the presented token', async () => {
    const res = await h.app.request('/admin/v1/orgs', { headers: { authorization: 'Bearer not-the-token-secret' } });
    expect(await res.text()).not.toContain('not-the-token-secret');
  });

  it('guards unknown admin paths too (401 before 404)', async () => {
    expect((await h.app.request('/admin/v1/nothing-here')).status).toBe(401);
    expect((await h.call('GET', '/nothing-here')).status).toBe(404);
  });

  it('accepts the right token', async () => {
    const res = await h.call('GET', '/orgs');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'list', data: [] });
  });
});
