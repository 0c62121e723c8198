import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, repoRoot, startGatewayProcess } from '../helpers/processes.js';
import { until } from '../helpers/wait.js';

/**
 * A newcomer's path: `npm start` (node dist/main.js) on a fresh data folder
 * with no settings at all, the address left to its default. What it prints
 * the first time: where the gateway and its portal are, the operator token,
 * the demo key and a first request, and how to sign in to the portal; each of
 * them works, and the gateway listens on loopback only.
 */
describe('the first start', () => {
  let gateway: GatewayProcess;
  let dataDir: string;
  let banner = '';

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-first-start-'));
    // TOLLGATE_HOST empty counts as unset: the default address, as a newcomer gets it.
    gateway = await startGatewayProcess('first-start', {
      TOLLGATE_HOST: '',
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_SEED_DEMO: 'true',
      TOLLGATE_PASSWORD_COST: '10',
    });
    await until('the first start has printed how to sign in', () => gateway.child.output().includes('shown once).'), {
      detail: () => gateway.child.output(),
    });
    banner = gateway.child.output();
  });
  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it("prints the portal's address and how to sign in, with a password that signs in", async () => {
    expect(banner).toContain(`The portal (API keys, usage, wallet, stacks, clusters): ${gateway.url}/portal`);
    const signIn = new RegExp(
      `Sign in to the portal at ${gateway.url.replace(/[.:/]/g, '\\$&')}/portal/sign-in as (\\S+) with the password (\\S+) \\(shown once\\)\\.`,
    ).exec(banner);
    expect(signIn, banner).not.toBeNull();
    const [, email, password] = signIn!;
    const signedIn = await fetch(`${gateway.url}/auth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
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

/** This machine's addresses that are not loopback: the gateway's port must not answer on them. */
function outsideAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter(
      (entry): entry is os.NetworkInterfaceInfo => entry !== undefined && !entry.internal && entry.family === 'IPv4',
    )
    .map((entry) => entry.address);
}

/** Whether a TCP connection to host:port is accepted (refused or unreachable: false). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('the default address', () => {
  let gateway: GatewayProcess;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-loopback-'));
    gateway = await startGatewayProcess('loopback', { TOLLGATE_HOST: '', TOLLGATE_DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it("is loopback: the port answers on 127.0.0.1 and not on this machine's other addresses", async () => {
    const port = Number(new URL(gateway.url).port);
    expect(await accepts('127.0.0.1', port)).toBe(true);
    const outside = outsideAddresses();
    if (outside.length === 0)
      console.warn('no non-loopback IPv4 address on this machine: only the loopback side is checked');
    for (const address of outside) expect(await accepts(address, port), `${address}:${port}`).toBe(false);
  });

  it('with the demo off, the first start says what to do next', async () => {
    const output = await until(
      'the start has printed its next steps',
      () => gateway.child.output().includes('docs/operating.md') && gateway.child.output(),
      {
        detail: () => gateway.child.output(),
      },
    );
    expect(output).toContain('No organizations yet (TOLLGATE_SEED_DEMO=false)');
    // Every command reaches this gateway, not the default 127.0.0.1:8080 (was: --url on the first
    // only).
    expect(output).toContain(`export TOLLGATE_URL=${gateway.url}`);
    expect(output).toMatch(/export TOLLGATE_URL=.*\n.*tollgate models add .*\n.*tollgate prices set/);
    expect(output).toContain('tollgate keys create');
  });
});

describe('a production start', () => {
  it('on PostgreSQL without TOLLGATE_ADMIN_TOKEN refuses to start, saying what to set', () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(TOLLGATE_|DATABASE_URL$|REDIS_URL$|PORT$)/.test(key)),
    );
    // The check comes before any connection: the database is never reached, so its address does not
    // matter.
    const run = spawnSync(process.execPath, ['dist/main.js'], {
      cwd: repoRoot,
      env: { ...env, DATABASE_URL: 'postgres://tollgate@127.0.0.1:1/tollgate', PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /TOLLGATE_ADMIN_TOKEN is not set: with DATABASE_URL every gateway process must share one operator token\. Set TOLLGATE_ADMIN_TOKEN/,
    );
  });
});
