import { and, eq, sql } from 'drizzle-orm';
import { clusters, nodeAllocations } from '../../../src/shared/db/schema.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers } from './harness.js';

const stores = await oneStore();
const OPERATOR = 'test-operator-token-0123456789';

describe.each(stores)('clusters and nodes (%s)', (store) => {
  let gateway: TestGateway;
  let profile: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(() => gateway?.close());

  const operator = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };

  /** A fresh profile with `count` free nodes. */
  async function profileWithNodes(count: number): Promise<string> {
    const name = `a100x8-${Math.random().toString(36).slice(2, 8)}`;
    expect(
      (
        await operator('POST', '/profiles', {
          name,
          gpus_per_node: 8,
          gpu_model: 'A100 80GB',
          cpu_cores: 96,
          memory_gib: 1024,
        })
      ).status,
    ).toBe(201);
    for (let i = 0; i < count; i++)
      expect(
        (
          await operator('POST', '/nodes', {
            profile: name,
            address: `${name}-n${i}.internal`,
            access: `ssh://ops@${name}-n${i}.internal:22`,
          })
        ).status,
      ).toBe(201);
    return name;
  }

  it('operators register profiles and nodes; duplicates and unknown profiles are refused', async () => {
    profile = await profileWithNodes(3);
    expect((await operator('GET', '/profiles')).body.data).toContainEqual(
      expect.objectContaining({ name: profile, gpus_per_node: 8, gpu_model: 'A100 80GB' }),
    );
    expect((await operator('POST', '/profiles', { name: profile, gpus_per_node: 8 })).status).toBe(409);
    expect((await operator('POST', '/nodes', { profile, address: `${profile}-n0.internal` })).status).toBe(409);
    expect((await operator('POST', '/nodes', { profile: 'nope', address: 'x.internal' })).body.error.details).toEqual([
      { field: 'profile', message: 'Unknown profile nope.' },
    ]);
    expect(
      (await operator('POST', '/profiles', { name: 'Bad Name', gpus_per_node: -1 })).body.error.details
        .map((d: { field: string }) => d.field)
        .sort(),
    ).toEqual(['gpus_per_node', 'name']);
  });

  it('creating a cluster allocates free nodes; deleting releases them, with exact times kept', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'member']);
    const asOwner = apiAs(gateway, users[0]!.key);
    const created = await asOwner('POST', '/clusters', {
      name: 'training',
      profile,
      nodes: 2,
      public_domain: 'Train.Example.com',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'training',
      profile,
      public_domain: 'train.example.com',
      state: 'running',
      deleted_at: null,
    });
    expect(created.body.nodes).toHaveLength(2);
    const free = (await operator('GET', '/nodes')).body.data.filter(
      (n: { profile: string; cluster_id: string | null }) => n.profile === profile && n.cluster_id === null,
    );
    expect(free).toHaveLength(1);
    // A member sees it, and cannot delete it.
    const asMember = apiAs(gateway, users[1]!.key);
    expect((await asMember('GET', `/clusters/${created.body.id}`)).body.nodes).toHaveLength(2);
    expect((await asMember('DELETE', `/clusters/${created.body.id}`)).status).toBe(403);
    expect(
      (await asMember('POST', '/clusters', { name: 'x', profile, nodes: 1, public_domain: 'x.example.com' })).status,
    ).toBe(403);

    expect((await asOwner('DELETE', `/clusters/${created.body.id}`)).status).toBe(204);
    const deleted = await asOwner('GET', `/clusters/${created.body.id}`);
    expect(deleted.body).toMatchObject({ state: 'deleted', nodes: [] });
    expect((await asOwner('DELETE', `/clusters/${created.body.id}`)).status).toBe(404);
    const allocations = await gateway.services.clusters.allocations(created.body.id);
    expect(allocations).toHaveLength(2);
    for (const allocation of allocations) {
      expect(allocation.allocatedAt.toISOString()).toBe(created.body.created_at);
      expect(allocation.releasedAt!.toISOString()).toBe(deleted.body.deleted_at);
    }
    // To the microsecond, in the database: the allocation is the cluster's life.
    const off = await gateway.services.db
      .select({ id: nodeAllocations.id })
      .from(nodeAllocations)
      .innerJoin(clusters, eq(clusters.id, nodeAllocations.clusterId))
      .where(
        and(
          eq(clusters.id, created.body.id),
          sql`(${nodeAllocations.allocatedAt} <> ${clusters.createdAt} or ${nodeAllocations.releasedAt} is distinct from ${clusters.deletedAt})`,
        ),
      );
    expect(off).toEqual([]);
    // Deleted clusters stay in the history on request.
    expect((await asOwner('GET', '/clusters')).body.data).toEqual([]);
    expect((await asOwner('GET', '/clusters?include_deleted=true')).body.data.map((c: { id: string }) => c.id)).toEqual(
      [created.body.id],
    );
  });

  it('never gives one node to two clusters: concurrent creations for more than is free', async () => {
    const twoNodes = await profileWithNodes(2);
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const answers = await Promise.all(
      [1, 2].map((i) =>
        api('POST', '/clusters', {
          name: `race-${i}`,
          profile: twoNodes,
          nodes: 2,
          public_domain: `race${i}.example.com`,
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const refused = answers.find((a) => a.status === 409)!;
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', details: [{ field: 'nodes' }] });
  });

  it('keeps organizations apart, and names every invalid field', async () => {
    const a = await orgWithUsers(gateway, ['owner']);
    const b = await orgWithUsers(gateway, ['owner']);
    const onePerOrg = await profileWithNodes(1);
    const cluster = (
      await apiAs(gateway, a.users[0]!.key)('POST', '/clusters', {
        name: 'a',
        profile: onePerOrg,
        nodes: 1,
        public_domain: 'a.example.com',
      })
    ).body;
    const asB = apiAs(gateway, b.users[0]!.key);
    expect((await asB('GET', '/clusters')).body.data).toEqual([]);
    expect((await asB('GET', `/clusters/${cluster.id}`)).status).toBe(404);
    expect((await asB('DELETE', `/clusters/${cluster.id}`)).status).toBe(404);
    const bad = await asB('POST', '/clusters', {
      name: '',
      profile: onePerOrg,
      nodes: 0,
      public_domain: 'not a domain',
      extra: 1,
    });
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'extra',
      'name',
      'nodes',
      'public_domain',
    ]);
  });
});
