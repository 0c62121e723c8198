import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseEngineDefinitions, type StaticDefinition } from '../../src/gateway/engines/definitions.js';
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
  deploy?: {
    resources?: {
      reservations?: { devices?: Array<{ driver?: string; capabilities?: string[]; device_ids?: string[] }> };
    };
  };
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
  const secrets = {
    POSTGRES_PASSWORD: 'test-postgres-password',
    TOLLGATE_ADMIN_TOKEN: 'test-admin-token',
    VLLM_API_KEY: 'test-vllm-key',
    GRAFANA_ADMIN_PASSWORD: 'test-grafana-password',
    TOLLGATE_PUBLIC_URL: 'https://gateway.example.com',
    ACME_EMAIL: 'ops@example.com',
  };
  const gatewayRun = { COMPOSE_FILE: 'docker-compose.yml:docker-compose.gateway-run.yml' };

  it(`is accepted by ${compose?.join(' ')} config, with every service and a GPU for each vLLM`, async () => {
    const { stdout } = await config({ ...secrets, COMPOSE_PROFILES: 'vllm' });
    const normalized = parse(stdout) as { services: Record<string, ComposeService> };
    expect(Object.keys(normalized.services).sort()).toEqual([
      'caddy',
      'gateway',
      'grafana',
      'postgres',
      'prometheus',
      'redis',
      'vllm-chat',
      'vllm-embed',
    ]);
    for (const name of ['vllm-chat', 'vllm-embed']) {
      const service = normalized.services[name] as ComposeService;
      expect(service.image, name).toMatch(/^vllm\/vllm-openai:/);
      const devices = service.deploy?.resources?.reservations?.devices ?? [];
      expect(devices, name).toEqual([expect.objectContaining({ driver: 'nvidia', capabilities: ['gpu'] })]);
    }
    expect(stdout).toContain('test-vllm-key');
  });

  it('refuses to render without the required secrets, and without the name and address TLS needs', async () => {
    await expect(config({ ...secrets, POSTGRES_PASSWORD: '' })).rejects.toThrow(/POSTGRES_PASSWORD/);
    await expect(config({ ...secrets, TOLLGATE_PUBLIC_URL: '' })).rejects.toThrow(/TOLLGATE_PUBLIC_URL/);
    await expect(config({ ...secrets, ACME_EMAIL: '' })).rejects.toThrow(/ACME_EMAIL/);
  });

  it('publishes nothing in plain HTTP on every interface: only Caddy is reachable from the network', async () => {
    for (const env of [{ COMPOSE_PROFILES: 'vllm' }, gatewayRun]) {
      const normalized = parse((await config({ ...secrets, ...env })).stdout) as {
        services: Record<string, { ports?: Array<string | { host_ip?: string; published?: number | string }> }>;
      };
      for (const [name, service] of Object.entries(normalized.services)) {
        for (const port of service.ports ?? []) {
          const local = typeof port === 'string' ? port.startsWith('127.0.0.1:') : port.host_ip === '127.0.0.1';
          if (name === 'caddy')
            expect([80, 443, '80', '443']).toContain(typeof port === 'string' ? port : port.published);
          else expect(local, `${name}: ${JSON.stringify(port)}`).toBe(true);
        }
      }
    }
  });

  it("runs vLLM one of the two documented ways: compose's services named by static engines, or engines the gateway runs through the socket", async () => {
    const engines = async (file: string) =>
      parseEngineDefinitions(await readFile(path.join(composeDir, file), 'utf8'), file);
    const own = parse((await config({ ...secrets, COMPOSE_PROFILES: 'vllm' })).stdout) as {
      services: Record<string, ComposeService & { profiles?: string[]; volumes?: unknown[] }>;
    };
    for (const engine of await engines('engines.json')) {
      expect(engine.kind).toBe('static');
      const name = (engine as StaticDefinition).dns!.name;
      expect(own.services[name]?.profiles, name).toEqual(['vllm']);
    }
    expect(JSON.stringify(own.services.gateway!.volumes)).not.toContain('docker.sock');
    const run = parse((await config({ ...secrets, ...gatewayRun })).stdout) as {
      services: Record<string, { environment?: Record<string, string>; volumes?: unknown[] }>;
      networks: Record<string, { name?: string }>;
    };
    expect(run.services.gateway!.environment!.TOLLGATE_ENGINES_FILE).toBe('/etc/tollgate/engines.gateway-run.json');
    expect(JSON.stringify(run.services.gateway!.volumes)).toContain('/var/run/docker.sock');
    for (const engine of await engines('engines.gateway-run.json')) {
      expect(engine).toMatchObject({ kind: 'docker', network: run.networks.default!.name });
    }
  });

  it('builds the gateway from this repository rather than pulling it', async () => {
    const normalized = parse((await config({ ...secrets, COMPOSE_PROFILES: 'vllm' })).stdout) as {
      services: Record<string, { build?: { context?: string; dockerfile?: string } }>;
    };
    expect(normalized.services.gateway!.build).toMatchObject({ context: repoRoot, dockerfile: 'compose/Dockerfile' });
    expect(await readFile(path.join(composeDir, 'README.md'), 'utf8')).not.toMatch(/<your fork>|git clone/);
  });
});
