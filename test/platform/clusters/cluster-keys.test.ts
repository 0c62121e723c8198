import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../../src/server/start.js';
import { clusterKeys } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { dumpDatabase, secretMarkers } from './markers.js';

/**
 * Each cluster's private key at rest: sealed with TOLLGATE_NODE_CREDENTIALS_KEY
 * and bound to the cluster; without the key (the embedded default) none is
 * kept; one stored in clear by an older gateway is sealed at the first start
 * with the key. On an embedded store in a folder, so the gateway can start
 * again on the same data.
 */
describe('cluster keys at rest', () => {
  let dataDir: string;
  let gateway: RunningGateway | null = null;
  let clusterId: string;
  const lines: string[] = [];

  async function start(key?: Buffer): Promise<RunningGateway> {
    await gateway?.close();
    lines.length = 0;
    const settings = {
      PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_ADMIN_TOKEN: 'test-operator-token-0123456789',
      TOLLGATE_RUN_WORKERS: '0',
      ...(key ? { TOLLGATE_NODE_CREDENTIALS_KEY: key.toString('base64') } : {}),
    };
    gateway = await startGateway(loadConfig(settings), { log: createLogger('info', (line) => lines.push(line)) });
    return gateway;
  }
  /** The fields of the line logged with `message` since the last start. */
  const logged = (message: string) =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.message === message);
  const stored = async () =>
    (await gateway!.services.db.select().from(clusterKeys).where(eq(clusterKeys.clusterId, clusterId)))[0];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-cluster-keys-'));
  });
  afterAll(async () => {
    await gateway?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('without the key a cluster works and keeps no key: each use gets a pair of its own', async () => {
    const { services } = await start();
    const org = await services.orgs.create('keys');
    await services.clusters.addProfile({ name: 'plain', gpusPerNode: 1 });
    await services.clusters.addNode({ profile: 'plain', address: '10.77.0.1' });
    clusterId = (
      await services.clusters.create({
        orgId: org.id,
        name: 'c',
        profile: 'plain',
        nodeCount: 1,
        publicDomain: 'keys.example.test',
        createdBy: null,
      })
    ).cluster.id;
    const first = await services.clusterIdentity.keyOf(clusterId);
    const second = await services.clusterIdentity.keyOf(clusterId);
    expect(first.privateKey).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/);
    expect(second.privateKey).not.toBe(first.privateKey);
    expect(await services.db.select().from(clusterKeys)).toEqual([]);
  });

  it('a key an older gateway stored in clear stays usable without the key, and is sealed at the first start with it', async () => {
    const legacy = (await gateway!.services.clusterIdentity.keyOf(clusterId)).privateKey;
    await gateway!.services.db
      .insert(clusterKeys)
      .values({ clusterId, publicKey: 'ssh-ed25519 AAAA legacy', privateKey: legacy });

    // Without the key: used as it is, and the start says it is in clear.
    await start();
    expect(
      logged('cluster keys are stored in clear: set TOLLGATE_NODE_CREDENTIALS_KEY and the next start seals them'),
    ).toMatchObject({ level: 'warn', count: 1 });
    expect((await gateway!.services.clusterIdentity.keyOf(clusterId)).privateKey).toBe(legacy);

    const key = randomBytes(32);
    const { services } = await start(key);
    expect(logged('cluster keys stored in clear were sealed')).toMatchObject({ level: 'info', count: 1 });
    expect(await stored()).toMatchObject({ privateKey: null, sealedPrivateKey: expect.stringMatching(/^v1:/) });
    expect((await services.clusterIdentity.keyOf(clusterId)).privateKey).toBe(legacy);
    const dump = await dumpDatabase(services.db);
    for (const marker of secretMarkers(legacy))
      expect(dump.includes(marker), `the database holds the key (${marker.slice(0, 12)}…)`).toBe(false);

    // A sealed key needs the key it was sealed with.
    await start(randomBytes(32));
    await expect(gateway!.services.clusterIdentity.keyOf(clusterId)).rejects.toThrow(
      `Cluster ${clusterId}'s key does not open with this gateway's TOLLGATE_NODE_CREDENTIALS_KEY`,
    );
    await start();
    await expect(gateway!.services.clusterIdentity.keyOf(clusterId)).rejects.toThrow(
      `Cluster ${clusterId}'s key is sealed, and this gateway has no TOLLGATE_NODE_CREDENTIALS_KEY`,
    );
  });

  it("with the key a new cluster's pair is made once and stored sealed, bound to the cluster", async () => {
    const key = randomBytes(32);
    const { services } = await start(key);
    const org = await services.orgs.create('sealed');
    await services.clusters.addNode({ profile: 'plain', address: '10.77.0.2' });
    clusterId = (
      await services.clusters.create({
        orgId: org.id,
        name: 'd',
        profile: 'plain',
        nodeCount: 1,
        publicDomain: 'sealed.example.test',
        createdBy: null,
      })
    ).cluster.id;
    const first = await services.clusterIdentity.keyOf(clusterId);
    expect((await services.clusterIdentity.keyOf(clusterId)).privateKey).toBe(first.privateKey);
    const dump = await dumpDatabase(services.db);
    expect(dump).toMatch(/^-- public\.cluster_keys: 2 rows/m);
    for (const marker of secretMarkers(first.privateKey))
      expect(dump.includes(marker), `the database holds the key (${marker.slice(0, 12)}…)`).toBe(false);
    expect(await stored()).toMatchObject({
      publicKey: first.publicKey,
      privateKey: null,
      sealedPrivateKey: expect.stringMatching(/^v1:/),
    });
  });
});
