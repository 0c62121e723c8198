import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../helpers/processes.js';
import { requireServices } from '../helpers/services.js';

// compose/docker-compose.yml as compose itself reads it: `docker compose config`
// (the v2 plugin) or Debian's `docker-compose config` (1.29), which must both accept it.

const run = promisify(execFile);
const composeDir = path.join(repoRoot, 'compose');

/** The compose command on this machine, or null (skipped; an error with REQUIRE_SERVICES=1). */
async function findCompose(): Promise<string[] | null> {
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    try {
      await run(command[0] as string, [...command.slice(1), 'version'], { timeout: 30_000 });
      return command;
    } catch {
      // next one
    }
  }
  const why = 'neither `docker compose` nor `docker-compose` runs';
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`);
  console.warn(`skipping compose tests: ${why}`);
  return null;
}

const compose = await findCompose();

interface ComposeService {
  image?: string;
  deploy?: { resources?: { reservations?: { devices?: Array<{ driver?: string; capabilities?: string[]; device_ids?: string[] }> } } };
}

describe.skipIf(!compose)('compose/docker-compose.yml', () => {
  // An empty --env-file keeps a developer's compose/.env out (compose 1.x refuses /dev/null):
  // the variables come from here.
  let tmp = '';
  let emptyEnvFile = '';
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(tmpdir(), 'tollgate-compose-'));
    emptyEnvFile = path.join(tmp, 'empty.env');
    await writeFile(emptyEnvFile, '');
  });
  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const config = async (env: Record<string, string>) => {
    const [command, ...args] = compose as string[];
    return run(command as string, [...args, '--env-file', emptyEnvFile, 'config'], {
      cwd: composeDir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...env },
      timeout: 60_000,
    });
  };
  const secrets = { POSTGRES_PASSWORD: 'test-postgres-password', TOLLGATE_ADMIN_TOKEN: 'test-admin-token', VLLM_API_KEY: 'test-vllm-key', GRAFANA_ADMIN_PASSWORD: 'test-grafana-password' };

  it(`is accepted by ${compose?.join(' ')} config, with every service and a GPU for each vLLM`, async () => {
    const { stdout } = await config(secrets);
    const normalized = parse(stdout) as { services: Record<string, ComposeService> };
    expect(Object.keys(normalized.services).sort()).toEqual(['caddy', 'gateway', 'grafana', 'postgres', 'prometheus', 'redis', 'vllm-chat', 'vllm-embed']);
    for (const name of ['vllm-chat', 'vllm-embed']) {
      const service = normalized.services[name] as ComposeService;
      expect(service.image, name).toMatch(/^vllm\/vllm-openai:/);
      const devices = service.deploy?.resources?.reservations?.devices ?? [];
      expect(devices, name).toEqual([expect.objectContaining({ driver: 'nvidia', capabilities: ['gpu'] })]);
    }
    expect(stdout).toContain('test-vllm-key');
  });

  it('refuses to render without the required secrets', async () => {
    await expect(config({ TOLLGATE_ADMIN_TOKEN: 'x', VLLM_API_KEY: 'y', GRAFANA_ADMIN_PASSWORD: 'z' })).rejects.toThrow(/POSTGRES_PASSWORD/);
  });
});
