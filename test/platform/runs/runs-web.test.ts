import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import {
  FAKE_MODULE,
  getWithHost,
  orgWithCluster,
  profileWithNodes,
  runCases,
  runEnded,
  runScratch,
} from './harness.js';

/**
 * A run's public URL: a module's web port or a manifest's `web_port` gives one, requests for its
 * host reach the node, and a public domain belongs to one live cluster. Each sandbox and each store
 * here, paired (`runCases`).
 */
const cases = await runCases();
skippedWithout(
  cases.length === 0
    ? 'runs: public URLs: no run sandbox here (bubblewrap, or a Docker engine; see the line above)'
    : null,
);

describe.each(cases)('runs: public URLs ($store, $kind.name sandbox)', ({ kind, store }) => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, ...kind.env });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('a module with a web port gets a public URL, and requests for its host reach the node', async () => {
    const web = http.createServer((req, res) =>
      res.end(`grafana says hi to ${req.url} via ${String(req.headers['x-forwarded-host'])}`),
    );
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const port = (web.address() as { port: number }).port;
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway, { nodes: 1, addresses: ['127.0.0.1'] });
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'web', port },
          })
        ).body.id,
      );
      expect(run).toMatchObject({
        state: 'APPLIED',
        public_url: `https://${stackName}.${cluster.public_domain}`,
        outputs: { web_port: port },
      });
      const host = `${stackName}.${cluster.public_domain}`;
      // fetch cannot set Host: node:http can, as a browser reaching the public URL through a TLS
      // terminator would.
      await until(
        'the public host routes to the node',
        async () => (await getWithHost(`${gateway.url}/dashboards?x=1`, host)).status === 200,
      );
      expect(await getWithHost(`${gateway.url}/dashboards?x=1`, host)).toEqual({
        status: 200,
        body: `grafana says hi to /dashboards?x=1 via ${host}`,
      });
      expect((await getWithHost(`${gateway.url}/dashboards`, `other.${cluster.public_domain}`)).status).toBe(404);
      // A TLS terminator asks before getting a certificate for a name: yes for this one, no for
      // others.
      expect((await fetch(`${gateway.url}/tls/allowed?domain=${host}`)).status).toBe(200);
      expect((await fetch(`${gateway.url}/tls/allowed?domain=other.${cluster.public_domain}`)).status).toBe(404);
      // Any other host is the gateway itself.
      expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
    } finally {
      web.close();
    }
  });

  it("a public domain belongs to one live cluster: another organization's claim is 409; a deleted cluster's host stops routing at once and is free again", async () => {
    const web = http.createServer((_req, res) => res.end('node says hi'));
    // Its own loopback address: node addresses are unique, and another test's node is 127.0.0.1.
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.9', resolve));
    const port = (web.address() as { port: number }).port;
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway, { nodes: 1, addresses: ['127.0.0.9'] });
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'web', port },
          })
        ).body.id,
      );
      const host = `${stackName}.${cluster.public_domain}`;
      expect(run.public_url).toBe(`https://${host}`);
      await until(
        'the public host routes to the node',
        async () => (await getWithHost(`${gateway.url}/`, host)).status === 200,
      );

      // Another organization asks for the same domain (in capitals too): 409, said as it would be
      // for any taken name.
      const { users } = await orgWithUsers(gateway, ['owner']);
      const other = apiAs(gateway, users[0]!.key);
      const free = await profileWithNodes(gateway, 1);
      for (const domain of [cluster.public_domain, cluster.public_domain.toUpperCase()]) {
        const claimed = await other('POST', '/clusters', {
          name: 'thief',
          profile: free,
          nodes: 1,
          public_domain: domain,
        });
        expect(claimed.status).toBe(409);
        expect(claimed.body.error).toMatchObject({
          code: 'CONFLICT',
          message: `The public domain ${cluster.public_domain} is taken; choose another.`,
        });
      }

      expect((await owner('DELETE', `/clusters/${cluster.id}`)).status).toBe(204);
      // At once on this replica: the host is the gateway's own again, and no certificate is
      // allowed for it.
      expect((await getWithHost(`${gateway.url}/`, host)).body).not.toBe('node says hi');
      expect((await fetch(`${gateway.url}/tls/allowed?domain=${host}`)).status).toBe(404);
      // The domain is free again.
      expect(
        (
          await other('POST', '/clusters', {
            name: 'next',
            profile: free,
            nodes: 1,
            public_domain: cluster.public_domain,
          })
        ).status,
      ).toBe(201);
    } finally {
      web.close();
    }
  });

  it("a manifest's web_port gives each run a public URL too", async () => {
    const { owner, users, cluster } = await orgWithCluster(gateway, { nodes: 1 });
    const name = `web-${Math.random().toString(36).slice(2, 8)}`;
    const form = new FormData();
    const zip = await zipOf({
      'manifest.json': JSON.stringify({
        name,
        title: 'Web',
        web_port: 8443,
        inputs: [{ name: 'name', type: 'string', default: 'x' }],
      }),
      'main.tf': FAKE_MODULE,
    });
    form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'web.zip');
    expect(
      (
        await fetch(`${gateway.url}/api/v1/stacks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${users[0]!.key}` },
          body: form,
        })
      ).status,
    ).toBe(201);
    const run = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: name })).body.id);
    expect(run).toMatchObject({ state: 'APPLIED', public_url: `https://${name}.${cluster.public_domain}` });
  });
});
