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
