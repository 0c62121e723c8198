import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { PublicHosts } from '../../../src/platform/runs/public-hosts.js';
import { startGateway, type RunningGateway } from '../../../src/server/start.js';
import type { Database } from '../../../src/shared/db/client.js';
import { createLogger } from '../../../src/shared/http/log.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { getWithHost, OPERATOR, orgWithCluster, runEnded, runScratch, sandboxAvailable } from './harness.js';

/**
 * How long another gateway process may keep routing a deleted cluster's hosts
 * (docs/stacks-and-runs.md: its refresh, 5 s).
 */
const OTHER_PROCESS_BOUND_MS = 5_000;

describe('public hosts: reads that overlap', () => {
  it('a read started before another was kept does not bring back a host the later one no longer had', async () => {
    const reads: Array<(targets: Map<string, string>) => void> = [];
    // Only the reads' order is under test: they are the test's, resolved in the order a slow store
    // might.
    const hosts = new PublicHosts(null as unknown as Database, createLogger('silent'), {
      read: () => new Promise((resolve) => reads.push(resolve)),
    });
    const before = hosts.refresh();
    const after = hosts.refresh();
    reads[1]!(new Map());
    await after;
    reads[0]!(new Map([['web.deleted.example.test', '10.0.0.1:3000']]));
    await before;
    expect(hosts.serves('web.deleted.example.test')).toBe(false);
    // A read started later still counts, whenever it ends.
    const next = hosts.refresh();
    reads[2]!(new Map([['web.new.example.test', '10.0.0.2:3000']]));
    await next;
    expect(hosts.serves('web.new.example.test')).toBe(true);
  });
});

const sandboxed = await sandboxAvailable();
const hasPostgres = sandboxed && (await postgresAvailable());
if (sandboxed && !hasPostgres) console.warn('skipping public hosts across processes: they need PostgreSQL');

describe.skipIf(!hasPostgres)(
  "public hosts in two gateway processes: a deleted cluster's hosts stop on the other within its bound",
  () => {
    let database: { url: string; drop(): Promise<void> };
    let scratch: Awaited<ReturnType<typeof runScratch>>;
    let dataDir: string;
    /** Gateway A, in this process: it applies the run and deletes the cluster. */
    let a: RunningGateway;
    /** Gateway B, another process on the same database: it only routes. */
    let b: GatewayProcess;
    let web: http.Server;

    beforeAll(async () => {
      database = await createTestDatabase();
      scratch = await runScratch();
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-public-hosts-'));
      const env = {
        ...scratch.env,
        TOLLGATE_RUN_SANDBOX: 'bubblewrap',
        DATABASE_URL: database.url,
        TOLLGATE_ADMIN_TOKEN: OPERATOR,
        TOLLGATE_PASSWORD_COST: '10',
      };
      a = await startGateway(
        loadConfig({
          ...env,
          PORT: '0',
          TOLLGATE_HOST: '127.0.0.1',
          TOLLGATE_DATA_DIR: 'memory://',
          TOLLGATE_SEED_DEMO: 'false',
          TOLLGATE_RUN_WORKERS: '1',
        }),
        {
          log: createLogger('silent'),
        },
      );
      b = await startGatewayProcess('public-hosts-b', {
        ...env,
        TOLLGATE_RUN_WORKERS: '0',
        TOLLGATE_DATA_DIR: dataDir,
      });
      web = http.createServer((request, response) => response.end(`node says hi to ${request.url}`));
      // Its own loopback address: node addresses are unique platform-wide.
      await new Promise<void>((resolve) => web.listen(0, '127.0.0.13', resolve));
    });
    afterAll(async () => {
      web?.close();
      await b?.child.stop('SIGTERM');
      await a?.close();
      await database?.drop();
      await scratch?.remove();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('B routes the host and allows its certificate; after A deletes the cluster, B answers 404 to both within the bound', async () => {
      const { owner, cluster, stackName } = await orgWithCluster(a as TestGateway, {
        nodes: 1,
        addresses: ['127.0.0.13'],
      });
      const port = (web.address() as { port: number }).port;
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'web', port },
          })
        ).body.id,
        30_000,
      );
      const host = `${stackName}.${cluster.public_domain}`;
      expect(run).toMatchObject({ state: 'APPLIED', public_url: `https://${host}` });
      await until(
        'B routes the public host to the node',
        async () => (await getWithHost(`${b.url}/only-on-the-node`, host)).status === 200,
        { timeout: OTHER_PROCESS_BOUND_MS + 1_500 },
      );
      expect(await getWithHost(`${b.url}/only-on-the-node`, host)).toEqual({
        status: 200,
        body: 'node says hi to /only-on-the-node',
      });
      expect((await fetch(`${b.url}/tls/allowed?domain=${host}`)).status).toBe(200);

      expect((await owner('DELETE', `/clusters/${cluster.id}`)).status).toBe(204);
      const deletedAt = Date.now();
      // On A at once.
      expect((await getWithHost(`${a.url}/only-on-the-node`, host)).status).toBe(404);
      expect((await fetch(`${a.url}/tls/allowed?domain=${host}`)).status).toBe(404);
      // On B within its refresh, with room for a loaded machine.
      await until(
        "B refuses the deleted cluster's host",
        async () =>
          (await getWithHost(`${b.url}/only-on-the-node`, host)).status === 404 &&
          (await fetch(`${b.url}/tls/allowed?domain=${host}`)).status === 404,
        { timeout: OTHER_PROCESS_BOUND_MS + 1_500, interval: 100 },
      );
      expect(Date.now() - deletedAt).toBeLessThan(OTHER_PROCESS_BOUND_MS + 1_500);
      expect((await getWithHost(`${b.url}/only-on-the-node`, host)).body).not.toContain('node says hi');
    }, 60_000);
  },
);
