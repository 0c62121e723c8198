import { randomBytes } from 'node:crypto';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openCredential, requireSealingKey, sealCredential } from '../../../src/platform/clusters/node-access.js';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort } from '../../helpers/processes.js';
import { operatorCall } from '../runs/harness.js';

const privateKey = ssh2.utils.generateKeyPairSync('ed25519').private;

describe('sealing node credentials and cluster keys (AES-256-GCM, bound to the row)', () => {
  const key = randomBytes(32);

  it('opens what it sealed, with the key and the id it was sealed with; each seal is new', () => {
    const sealed = sealCredential(key, 'node_a', privateKey);
    expect(sealed).toMatch(/^v1:[A-Za-z0-9+/]+=*$/);
    expect(sealed).not.toContain(privateKey.split('\n')[2]);
    expect(openCredential(key, 'node_a', sealed)).toBe(privateKey);
    // A fresh IV each time: the same secret sealed twice is two different values.
    expect(sealCredential(key, 'node_a', privateKey)).not.toBe(sealed);
    expect(openCredential(key, 'cls_x', sealCredential(key, 'cls_x', 'é ✓\n'))).toBe('é ✓\n');
  });

  it('does not open with another key', () => {
    const sealed = sealCredential(key, 'node_a', privateKey);
    expect(() => openCredential(randomBytes(32), 'node_a', sealed)).toThrow();
  });

  it("does not open when moved to another node's row, or to a cluster's", () => {
    const sealed = sealCredential(key, 'node_a', privateKey);
    expect(() => openCredential(key, 'node_b', sealed)).toThrow();
    expect(() => openCredential(key, 'cls_a', sealed)).toThrow();
  });

  it('does not open when changed, cut short, or not sealed at all', () => {
    const sealed = sealCredential(key, 'node_a', privateKey);
    const raw = Buffer.from(sealed.slice(3), 'base64');
    const flipped = Buffer.from(raw);
    flipped[raw.length - 1] = flipped[raw.length - 1]! ^ 1;
    expect(() => openCredential(key, 'node_a', `v1:${flipped.toString('base64')}`)).toThrow();
    // Cut inside the tag.
    expect(() => openCredential(key, 'node_a', `v1:${raw.subarray(0, 24).toString('base64')}`)).toThrow();
    expect(() => openCredential(key, 'node_a', privateKey)).toThrow('not a sealed credential');
  });

  it("without the operator's key, asks for it with a 503", () => {
    expect(requireSealingKey(key)).toBe(key);
    let thrown: unknown;
    try {
      requireSealingKey(undefined);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(GatewayError);
    expect(thrown).toMatchObject({
      status: 503,
      code: 'node_access_unavailable',
      message: expect.stringContaining('set TOLLGATE_NODE_CREDENTIALS_KEY'),
    });
  });
});

describe('adding a node with SSH access on a gateway without TOLLGATE_NODE_CREDENTIALS_KEY', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
  });
  afterAll(() => gateway?.close());

  it('is 503 node_access_unavailable before any connection, and stores nothing; a node without SSH is added', async () => {
    expect((await operatorCall(gateway, 'POST', '/profiles', { name: 'nokey', gpus_per_node: 1 })).status).toBe(201);
    // Nothing listens on the port: had the gateway tried to connect, the answer would be a 400
    // saying so.
    const ssh = {
      user: 'ops',
      port: await freePort(),
      private_key: privateKey,
      host_key_fingerprint: `SHA256:${'A'.repeat(43)}`,
    };
    const refused = await operatorCall(gateway, 'POST', '/nodes', { profile: 'nokey', address: '127.0.0.1', ssh });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({
      code: 'node_access_unavailable',
      type: 'server_error',
      message: expect.stringContaining('set TOLLGATE_NODE_CREDENTIALS_KEY'),
    });
    expect(JSON.stringify(refused.body)).not.toContain(privateKey.split('\n')[2]);
    expect((await operatorCall(gateway, 'GET', '/nodes')).body.data).toEqual([]);
    const plain = await operatorCall(gateway, 'POST', '/nodes', { profile: 'nokey', address: '127.0.0.1' });
    expect(plain).toMatchObject({ status: 201, body: { address: '127.0.0.1', ssh: null, state: 'free' } });
  });
});
