import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();
const OPERATOR = 'test-operator-token-0123456789';
/** Fixed, so a failure can be replayed; printed by fast-check with the failing case. */
const SEED = 20_261_122;
const RUNS = 150;

/**
 * Generated bodies, paths and headers sent over real HTTP to every route:
 * whatever a client sends, the gateway itself never answers 5xx, and every
 * error is the envelope. The engines are the healthy built-in simulator, so
 * a 502/503/504 is a failure too.
 */
describe.each(stores)('fuzzing every route (%s)', (store) => {
  let gateway: TestGateway;
  let secret: string;
  /** A key that acts as an owner, for the generic API. */
  let ownerKey: string;
  let userId: string;
  let orgId: string;
  let keyId: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store);
    ({ secret, orgId, keyId } = await gateway.tenant({
      credit: '1000.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    }));
    const owner = await gateway.services.users.create({
      orgId,
      name: 'Fuzz Owner',
      email: 'fuzz-owner@example.com',
      password: 'fuzz-owner-password',
      role: 'owner',
    });
    userId = owner.id;
    ownerKey = (await gateway.services.keys.create({ orgId, userId, name: 'owner' })).secret;
  });
  afterAll(async () => {
    console.log(`fuzz (${store}): answers by status ${JSON.stringify(Object.fromEntries(statuses))}`);
    await gateway?.close();
  });
  const statuses = new Map<number, number>();

  async function expectNo5xx(method: string, path: string, headers: Record<string, string>, body?: string) {
    const response = await fetch(`${gateway.url}${path}`, { method, headers, body });
    const text = await response.text();
    const where = `${method} ${path} -> ${response.status}: ${text.slice(0, 300)}`;
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    expect(response.status, where).toBeLessThan(500);
    if (response.status >= 400 && method !== 'HEAD') {
      const error = (
        JSON.parse(text) as { error?: { message?: unknown; type?: unknown; code?: unknown; details?: unknown } }
      ).error;
      // The generic API (and /auth) answer in the second spec's envelope: an upper-case code and
      // details, no type.
      const generic = /^\/(api\/v1|auth)\/|^\/v1\/(users|projects|me|stacks|clusters)(\/|$|\?)/.test(path);
      const shaped = generic
        ? typeof error?.message === 'string' &&
          typeof error.code === 'string' &&
          /^[A-Z_]+$/.test(error.code) &&
          Array.isArray(error.details)
        : typeof error?.message === 'string' && typeof error.type === 'string' && typeof error.code === 'string';
      expect(shaped, where).toBe(true);
    }
  }

  const text = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('', '\u0000', 'sim\u0000chat', '\ud800', 'sim-chat', 'sim-embed', 'x'.repeat(5000)),
  );
  const anything = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }),
    text,
    fc.constantFrom(-1, 0, 1e308, 2 ** 53, 1.5, -0, null, true),
  );
  const chatBody = fc.record(
    {
      model: fc.oneof(anything, { arbitrary: fc.constant('sim-chat'), weight: 4 }),
      messages: fc.oneof(
        anything,
        { arbitrary: fc.constant([{ role: 'user', content: 'hi' }]), weight: 2 },
        fc.array(
          fc.record(
            { role: fc.oneof(anything, fc.constantFrom('user', 'system')), content: anything },
            { requiredKeys: [] },
          ),
          { maxLength: 3 },
        ),
      ),
      stream: anything,
      stream_options: anything,
      max_tokens: fc.oneof(anything, fc.integer({ min: -5, max: 64 })),
      max_completion_tokens: anything,
      temperature: anything,
      n: fc.oneof(anything, fc.integer({ min: -1, max: 3 })),
    },
    { requiredKeys: [] },
  );
  const embedBody = fc.record(
    {
      model: fc.oneof(anything, { arbitrary: fc.constant('sim-embed'), weight: 4 }),
      input: anything,
      encoding_format: anything,
      dimensions: anything,
    },
    { requiredKeys: [] },
  );
  const rawBody = fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    text,
    fc.nat({ max: 5000 }).map((n) => `{"model":"sim-chat","messages":${'['.repeat(n)}${']'.repeat(n)}}`),
  );
  // The key exists only once the gateway runs: the headers are made when a case runs.
  const auth = fc.oneof(
    fc.constant(() => ({})),
    { arbitrary: fc.constant(() => ({ authorization: `Bearer ${secret}` })), weight: 4 },
    fc.constant(() => ({ authorization: `Bearer ${OPERATOR}` })),
    fc.string().map((s) => () => ({ authorization: `Bearer ${s.replace(/[^\x21-\x7e]/g, '')}` })),
  );
  const headerValue = fc.string({ maxLength: 200 }).map((s) => s.replace(/[^\x20-\x7e]/g, ''));
  const extraHeaders = fc.record(
    {
      'content-type': fc.oneof(headerValue, fc.constantFrom('application/json', 'text/plain', 'multipart/form-data')),
      'x-project-id': headerValue,
    },
    { requiredKeys: [] },
  );
  const segment = fc.oneof(
    fc.string({ maxLength: 40 }).map(encodeURIComponent),
    fc.constantFrom('%FF', '%00', '%', '..', '%2e%2e', '%E0%A4%A', 'a%2Fb', 'sim-chat'),
  );

  it('POST /v1/chat/completions and /v1/embeddings', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          chatBody.map((b) => ['/v1/chat/completions', JSON.stringify(b)] as const),
          embedBody.map((b) => ['/v1/embeddings', JSON.stringify(b)] as const),
          rawBody.map((b) => ['/v1/chat/completions', b] as const),
        ),
        auth,
        extraHeaders,
        async ([path, body], authHeaders, headers) => {
          await expectNo5xx('POST', path, { ...headers, ...authHeaders() }, body);
        },
      ),
      { numRuns: RUNS * 2, seed: SEED },
    );
  });

  it('GET routes of /v1 with generated paths and queries', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          segment.map((s) => `/v1/models/${s}`),
          fc.tuple(segment, segment).map(([a, b]) => `/v1/models/${a}/${b}`),
          segment.map((s) => `/v1/models?task_type=${s}`),
          fc.tuple(segment, segment, segment).map(([g, f, t]) => `/v1/usage/summary?group_by=${g}&from=${f}&to=${t}`),
          fc.tuple(segment, segment).map(([l, a]) => `/v1/usage/requests?limit=${l}&after=${a}&key_id=${l}`),
          segment.map((s) => `/v1/pricing?${s}=${s}`),
          segment.map((s) => `/v1/responses/${s}`),
          fc
            .tuple(segment, segment, segment)
            .map(([l, o, a]) => `/v1/responses/${a}/input_items?limit=${l}&order=${o}&after=${a}`),
          segment.map((s) => `/v1/${s}`),
          segment.map((s) => `/${s}`),
        ),
        auth,
        fc.constantFrom('GET', 'POST', 'DELETE', 'PUT', 'OPTIONS', 'HEAD', 'PATCH'),
        async (path, authHeaders, method) => {
          await expectNo5xx(method, path, authHeaders(), method === 'GET' || method === 'HEAD' ? undefined : '{}');
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('the management API', { timeout: 120_000 }, async () => {
    const routes = [
      ['POST', '/orgs'],
      ['GET', `/orgs/${orgId}`],
      ['POST', `/orgs/${orgId}/projects`],
      ['POST', `/orgs/${orgId}/wallet/topups`],
      ['POST', `/orgs/${orgId}/wallet/adjustments`],
      ['GET', `/orgs/${orgId}/wallet`],
      ['POST', `/orgs/${orgId}/keys`],
      ['PATCH', `/keys/${keyId}`],
      ['POST', '/models'],
      ['PATCH', '/models/sim-chat'],
      ['PUT', '/prices/sim-chat'],
      ['POST', '/engines/sim-chat/scale'],
    ] as const;
    const adminBody = fc.oneof(
      fc
        .record(
          {
            name: anything,
            note: anything,
            amount: anything,
            id: anything,
            display_name: anything,
            hf_repo_id: anything,
            task_type: anything,
            context_length: anything,
            input_per_million: anything,
            output_per_million: anything,
            replicas: anything,
            expiry: anything,
            requests_per_minute: anything,
            project_id: anything,
          },
          { requiredKeys: [] },
        )
        .map((b) => JSON.stringify(b)),
      rawBody,
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        adminBody,
        fc.boolean(),
        segment,
        async ([method, route], body, authorized, id) => {
          const headers = {
            'content-type': 'application/json',
            ...(authorized ? { authorization: `Bearer ${OPERATOR}` } : {}),
          };
          await expectNo5xx(method, `/admin/v1${route}`, headers, method === 'GET' ? undefined : body);
          await expectNo5xx('GET', `/admin/v1/orgs/${id}`, headers);
          await expectNo5xx('GET', `/admin/v1/keys/${id}`, headers);
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('the generic API and sign-in', { timeout: 120_000 }, async () => {
    const routes = [
      ['GET', '/api/v1/users'],
      ['POST', '/api/v1/users'],
      ['GET', '/api/v1/users/ID'],
      ['PUT', '/api/v1/users/ID'],
      ['DELETE', '/api/v1/users/ID'],
      ['GET', '/api/v1/projects'],
      ['POST', '/api/v1/projects'],
      ['PUT', '/api/v1/projects/ID'],
      ['GET', '/v1/users'],
      ['POST', '/auth/sign-in'],
      ['POST', '/auth/sign-out'],
    ] as const;
    const apiBody = fc.oneof(
      fc
        .record(
          {
            name: anything,
            email: anything,
            password: anything,
            current_password: anything,
            role: anything,
            org_id: anything,
            description: anything,
            visibility: anything,
          },
          { requiredKeys: [] },
        )
        .map((b) => JSON.stringify(b)),
      rawBody,
    );
    const query = fc
      .record({ page: segment, limit: segment, sort: segment }, { requiredKeys: [] })
      .map((q) => new URLSearchParams(q).toString());
    const credentials = fc.constantFrom('owner', 'none', 'cookie', 'keyWithoutUser');
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        apiBody,
        query,
        segment,
        credentials,
        async ([method, route], body, search, id, who) => {
          const headers: Record<string, string> = { 'content-type': 'application/json' };
          if (who === 'owner') headers.authorization = `Bearer ${ownerKey}`;
          if (who === 'keyWithoutUser') headers.authorization = `Bearer ${secret}`;
          if (who === 'cookie') headers.cookie = `tollgate_session=${id}`;
          // Never the owner's own id: a generated body must not delete or demote the caller
          // mid-run.
          const path = route.replace('ID', id === userId ? 'x' : id);
          await expectNo5xx(
            method,
            `${path}${method === 'GET' ? `?${search}` : ''}`,
            headers,
            method === 'GET' || method === 'DELETE' ? undefined : body,
          );
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
