import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, startGatewayProcess } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';

/**
 * What `npm start` prints the first time, on the embedded default: where the
 * gateway and its portal are, the operator token, the demo key and a first
 * request, and how to sign in to the portal; each of them works.
 */
describe('the first start', () => {
  let gateway: GatewayProcess;
  let dataDir: string;
  let banner = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-first-start-'));
    gateway = await startGatewayProcess('first-start', { TOLLGATE_DATA_DIR: dataDir, TOLLGATE_SEED_DEMO: 'true', TOLLGATE_PASSWORD_COST: '10' });
    await until('the first start has printed how to sign in', () => gateway.child.output().includes('shown once).'), { detail: () => gateway.child.output() });
    banner = gateway.child.output();
  });
  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it("prints the portal's address and how to sign in, with a password that signs in", async () => {
    expect(banner).toContain(`The portal (API keys, usage, wallet, stacks, clusters): ${gateway.url}/portal`);
    const signIn = new RegExp(`Sign in to the portal at ${gateway.url.replace(/[.:/]/g, '\\$&')}/portal/sign-in as (\\S+) with the password (\\S+) \\(shown once\\)\\.`).exec(banner);
    expect(signIn, banner).not.toBeNull();
    const [, email, password] = signIn!;
    const signedIn = await fetch(`${gateway.url}/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
    expect(signedIn.status).toBe(200);
    expect(signedIn.headers.get('set-cookie')).toBeTruthy();
  });

  it('prints a key and a first request that answers', async () => {
    const key = /this API key \(shown once, keep it\):\n {2}(sk-gw-\S+)/.exec(banner)?.[1];
    expect(key, banner).toBeDefined();
    const model = /"model":"([^"]+)"/.exec(banner)?.[1];
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello!' }] }),
    });
    expect(answer.status).toBe(200);
  });
});
