import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { settingsSchema } from '../src/config/settings.js';

describe('docs/settings.md', () => {
  it('names every setting the gateway reads', async () => {
    const doc = await readFile(path.resolve(import.meta.dirname, '../docs/settings.md'), 'utf8');
    expect(Object.keys(settingsSchema.shape).filter((name) => !doc.includes(`\`${name}\``))).toEqual([]);
  });
});

describe('settings of the people layer', () => {
  it('has the stated defaults', () => {
    const { people } = loadConfig({});
    expect(people).toEqual({
      passwordCost: 15,
      sessionIdleMs: 720 * 60_000,
      sessionMaxMs: 168 * 3_600_000,
      trustedProxies: [],
    });
  });

  it('reads trusted proxies as addresses, ranges and names', () => {
    expect(
      loadConfig({ TOLLGATE_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1,loopback, ::1' }).people.trustedProxies,
    ).toEqual(['10.0.0.0/8', '127.0.0.1', 'loopback', '::1']);
  });

  it('refuses what is not an address, and a password cost out of range, naming the setting', () => {
    expect(() => loadConfig({ TOLLGATE_TRUSTED_PROXIES: 'proxy.example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ TOLLGATE_TRUSTED_PROXIES: '10.0.0.0/99' })).toThrow(/TOLLGATE_TRUSTED_PROXIES/);
    expect(() => loadConfig({ TOLLGATE_PASSWORD_COST: '9' })).toThrow(/TOLLGATE_PASSWORD_COST/);
    expect(() => loadConfig({ TOLLGATE_SESSION_IDLE_MINUTES: '0' })).toThrow(/TOLLGATE_SESSION_IDLE_MINUTES/);
  });
});

describe('settings of Redis (issue 69)', () => {
  it('reads a Redis Cluster’s nodes, or sentinels with their master’s name; neither: REDIS_URL or none', () => {
    expect(loadConfig({}).redis).toBeUndefined();
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis?.url).toBe('redis://127.0.0.1:6379');
    const cluster = loadConfig({ TOLLGATE_REDIS_CLUSTER_NODES: 'a:7000,10.0.0.2:7001' }).redis;
    expect(cluster?.clusterNodes).toEqual([
      { host: 'a', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
    ]);
    const sentinel = loadConfig({ TOLLGATE_REDIS_SENTINELS: 's1:26379', TOLLGATE_REDIS_SENTINEL_NAME: 'main' }).redis;
    expect(sentinel).toMatchObject({ sentinels: [{ host: 's1', port: 26379 }], sentinelName: 'main' });
  });

  it('refuses a list that is not host:port pairs, and both kinds at once, naming the settings', () => {
    expect(() => loadConfig({ TOLLGATE_REDIS_CLUSTER_NODES: 'a:7000, b' })).toThrow(/TOLLGATE_REDIS_CLUSTER_NODES/);
    expect(() => loadConfig({ TOLLGATE_REDIS_CLUSTER_NODES: 'a:1', TOLLGATE_REDIS_SENTINELS: 'b:2' })).toThrow(
      /not both/,
    );
  });
});
