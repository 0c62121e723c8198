import { describe, expect, it } from 'vitest';
import { ClusterService } from '../../../src/platform/clusters/service.js';
import type { Database } from '../../../src/shared/db/client.js';

/**
 * A cluster's public domain may not reach the gateway's own host names: above one,
 * `<stack>.<domain>` would be the gateway; below one, a stack's answers could set cookies for the
 * gateway's host.
 */
describe("public domains and the gateway's own host names", () => {
  // Refused before the store is asked: no database is needed.
  const clusters = new ClusterService(null as unknown as Database, {
    nodeAccess: { sshTimeoutMs: 1000 },
    reservedHosts: ['localhost', 'api.example.com'],
  });
  const create = (publicDomain: string) =>
    clusters.create({ orgId: 'org_x', name: 'c', profile: 'p', nodeCount: 1, publicDomain, createdBy: null });

  it("refuses the gateway's host and every domain above or below it, whatever the case", async () => {
    for (const domain of [
      'api.example.com',
      'example.com',
      'EXAMPLE.com',
      'x.api.example.com',
      'a.b.API.example.com',
    ]) {
      await expect(create(domain)).rejects.toMatchObject({
        code: 'conflict',
        details: [{ field: 'public_domain', message: "It would reach the gateway's own host api.example.com." }],
      });
    }
    await expect(create('apps.localhost')).rejects.toMatchObject({ code: 'conflict' });
  });

  it('takes a domain beside it (the store is asked next)', async () => {
    for (const domain of ['example.org', 'xapi.example.com', 'other.example.com'])
      await expect(create(domain)).rejects.toThrow(TypeError);
  });
});
