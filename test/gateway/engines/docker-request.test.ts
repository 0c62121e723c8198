import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEngineDefinitions } from '../../../src/gateway/engines/definitions.js';
import { startDockerEngine } from '../../../src/gateway/engines/docker/engine.js';
import { GpusBeingPlaced } from '../../../src/gateway/engines/docker/hosts.js';
import { createLogger } from '../../../src/shared/http/log.js';

/**
 * What the gateway sends to the Docker Engine API for a GPU engine, captured
 * by a stand-in of the API on 127.0.0.1 (no GPU or engine needed), and checked
 * field by field.
 */
describe('the container the gateway asks Docker for', () => {
  const requests: Array<{ method: string; path: string; body: unknown }> = [];
  let server: http.Server;
  let port = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        const path = (req.url ?? '').replace(/^\/v[\d.]+/, '').split('?')[0]!;
        requests.push({ method: req.method!, path, body: text ? JSON.parse(text) : null });
        res.setHeader('content-type', 'application/json');
        if (req.method === 'GET' && path.startsWith('/images/')) return res.end('{"Id":"sha256:abc"}');
        if (req.method === 'GET' && path === '/containers/json') return res.end('[]');
        if (req.method === 'POST' && path === '/containers/create')
          return res.writeHead(201).end('{"Id":"c0ffee","Warnings":[]}');
        if (req.method === 'POST' && /\/containers\/\w+\/start/.test(path)) return res.writeHead(204).end();
        res.writeHead(404).end('{"message":"not in this stand-in"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends vLLM’s command line, GPUs as DeviceRequests, IPC, the HF cache, the environment and our labels', async () => {
    const [definition] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: 'qwen2.5-7b',
            image: 'vllm/vllm-openai:v0.11.0',
            hf_repo: 'Qwen/Qwen2.5-7B-Instruct',
            served_model_name: 'qwen',
            args: ['--max-model-len', '32768', '--tensor-parallel-size', '2'],
            gpus: ['0', '1'],
            replicas: 1,
            env: { HF_HUB_OFFLINE: '0' },
            env_from: ['HF_TOKEN'],
            hf_cache: '/var/lib/hf-cache',
            port: 18000,
          },
        ],
      }),
    );
    const docker = new Docker({ host: '127.0.0.1', port, protocol: 'http' });
    const engine = await startDockerEngine(definition as Extract<typeof definition, { kind: 'docker' }>, {
      docker,
      log: createLogger('silent'),
      env: { HF_TOKEN: 'hf_secret' },
      pollMs: 60_000,
      deployment: 'prod',
    });
    await engine.close();

    const create = requests.find((r) => r.path === '/containers/create')!;
    expect(create).toBeDefined();
    const body = create.body as Record<string, any>;
    expect(body.Image).toBe('vllm/vllm-openai:v0.11.0');
    expect(body.Entrypoint).toEqual(['vllm', 'serve']);
    expect(body.Cmd).toEqual([
      'Qwen/Qwen2.5-7B-Instruct',
      '--served-model-name',
      'qwen',
      '--host',
      '127.0.0.1',
      '--port',
      '18000',
      '--max-model-len',
      '32768',
      '--tensor-parallel-size',
      '2',
    ]);
    expect(body.Env).toEqual(['HF_HUB_OFFLINE=0', 'HF_TOKEN=hf_secret']);
    expect(body.Labels).toEqual({
      'tollgate.managed': 'true',
      'tollgate.deployment': 'prod',
      'tollgate.engine': 'qwen2.5-7b',
      'tollgate.replica': '0',
      'tollgate.spec': expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(body.HostConfig.NetworkMode).toBe('host');
    expect(body.HostConfig.IpcMode).toBe('host');
    expect(body.HostConfig.Binds).toEqual(['/var/lib/hf-cache:/root/.cache/huggingface']);
    // Count and DeviceIDs are mutually exclusive in Docker's API: ids given, so no Count.
    expect(body.HostConfig.DeviceRequests).toEqual([
      { Driver: 'nvidia', DeviceIDs: ['0', '1'], Capabilities: [['gpu']] },
    ]);
    expect(body.HostConfig.RestartPolicy).toEqual({ Name: 'no' });
    expect(body.ExposedPorts).toBeUndefined();
    // The container name travels as a query parameter.
    expect(requests.some((r) => r.method === 'POST' && /\/containers\/c0ffee\/start/.test(r.path))).toBe(true);
  });

  it('places replicas on a host by GPU id: one GPU each, never the same one, asked for as DeviceRequests and labelled', async () => {
    const [definition] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: 'placed',
            image: 'vllm/vllm-openai:v0.11.0',
            hf_repo: 'Qwen/Qwen2.5-7B-Instruct',
            replicas: 2,
            gpus: 1,
            port: 18100,
            hosts: [{ docker_host: `tcp://127.0.0.1:${port}`, gpus: ['0', '1', '2'] }],
          },
        ],
      }),
    );
    const before = requests.length;
    const engine = await startDockerEngine(definition as Extract<typeof definition, { kind: 'docker' }>, {
      docker: new Docker({ host: '127.0.0.1', port, protocol: 'http' }),
      log: createLogger('silent'),
      env: {},
      pollMs: 60_000,
      deployment: 'prod',
    });
    await engine.close();
    const creates = requests.slice(before).filter((r) => r.path === '/containers/create');
    const bodies = creates.map(
      (r) => r.body as { Labels: Record<string, string>; HostConfig: { DeviceRequests: unknown } },
    );
    expect(bodies.map((b) => b.HostConfig.DeviceRequests)).toEqual([
      [{ Driver: 'nvidia', DeviceIDs: ['0'], Capabilities: [['gpu']] }],
      [{ Driver: 'nvidia', DeviceIDs: ['1'], Capabilities: [['gpu']] }],
    ]);
    expect(
      bodies.map((b) => [b.Labels['tollgate.replica'], b.Labels['tollgate.gpus'], b.Labels['tollgate.host']]),
    ).toEqual([
      ['0', '0', `tcp://127.0.0.1:${port}`],
      ['1', '1', `tcp://127.0.0.1:${port}`],
    ]);
    expect(engine.status().replicas.map((r) => ({ id: r.id, host: r.host, gpus: r.gpus }))).toEqual([
      { id: 'placed/0', host: `tcp://127.0.0.1:${port}`, gpus: ['0'] },
      { id: 'placed/1', host: `tcp://127.0.0.1:${port}`, gpus: ['1'] },
    ]);
  });

  it('never gives two engines on one host the same GPU, even before a listing shows the first one’s container', async () => {
    const host = `tcp://127.0.0.1:${port}`;
    const definitions = parseEngineDefinitions(
      JSON.stringify({
        engines: ['first', 'second'].map((model, i) => ({
          kind: 'docker',
          model,
          image: 'vllm/vllm-openai:v0.11.0',
          hf_repo: `org/${model}`,
          replicas: 1,
          port: 18200 + i,
          hosts: [{ docker_host: host, gpus: ['4', '5'] }],
        })),
      }),
    );
    const before = requests.length;
    // The stand-in lists no containers: only what this process placed keeps the first GPU taken.
    // The GPUs being placed are the fleet's, shared by its Docker engines, as `startFleet` shares
    // them.
    const placing = new GpusBeingPlaced();
    for (const definition of definitions) {
      const engine = await startDockerEngine(definition as Extract<(typeof definitions)[number], { kind: 'docker' }>, {
        docker: new Docker({ host: '127.0.0.1', port, protocol: 'http' }),
        log: createLogger('silent'),
        env: {},
        pollMs: 60_000,
        deployment: 'prod',
        placing,
      });
      await engine.close();
    }
    const creates = requests.slice(before).filter((r) => r.path === '/containers/create');
    expect(creates.map((r) => (r.body as { Labels: Record<string, string> }).Labels['tollgate.gpus'])).toEqual([
      '4',
      '5',
    ]);
  });

  it('asks for a GPU count (all GPUs is -1) and a shared-memory size on a Docker network', async () => {
    const { containerSpec } = await import('../../../src/gateway/engines/docker/spec.js');
    const [definition] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: 'bge',
            image: 'vllm',
            hf_repo: 'BAAI/bge',
            gpus: 'all',
            ipc_host: false,
            shm_size: '16g',
            network: 'tollgate',
            args: ['--runner', 'pooling'],
          },
        ],
      }),
    );
    const spec = containerSpec(definition as Extract<typeof definition, { kind: 'docker' }>, 1, {}, 'prod');
    expect(spec.name).toBe('tollgate-prod-bge-1');
    expect(spec.HostConfig?.DeviceRequests).toEqual([{ Driver: 'nvidia', Count: -1, Capabilities: [['gpu']] }]);
    expect(spec.HostConfig?.IpcMode).toBeUndefined();
    expect(spec.HostConfig?.ShmSize).toBe(16 * 1024 ** 3);
    expect(spec.HostConfig?.NetworkMode).toBe('tollgate');
    // On a Docker network every replica uses the same port and is reached by its name.
    expect(spec.Cmd).toEqual([
      'BAAI/bge',
      '--served-model-name',
      'bge',
      '--host',
      '0.0.0.0',
      '--port',
      '8000',
      '--runner',
      'pooling',
    ]);
    expect(spec.ExposedPorts).toEqual({ '8000/tcp': {} });
  });
});
