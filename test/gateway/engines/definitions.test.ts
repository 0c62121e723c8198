import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  parseEngineDefinitions,
  readEngineDefinitions,
  type SimulatorDefinition,
} from '../../../src/gateway/engines/definitions.js';
import { type DockerDefinition, replicaBounds } from '../../../src/gateway/engines/docker-definition.js';
import { startSimulatorEngines } from '../../../src/gateway/engines/simulator.js';
import { containerSpec } from '../../../src/gateway/engines/docker/spec.js';

const docker = (fields: Record<string, unknown>) =>
  JSON.stringify({ engines: [{ kind: 'docker', model: 'm', image: 'vllm', hf_repo: 'org/m', ...fields }] });
const parsed = (fields: Record<string, unknown>) => parseEngineDefinitions(docker(fields))[0] as DockerDefinition;

describe('Docker engine definitions: replica bounds, autoscaling and hosts', () => {
  it('reads replicas as a fixed count, min/max as bounds, and neither as one replica', () => {
    expect(replicaBounds(parsed({}))).toEqual({ min: 1, max: 1 });
    expect(replicaBounds(parsed({ replicas: 3 }))).toEqual({ min: 3, max: 3 });
    expect(replicaBounds(parsed({ min_replicas: 0, max_replicas: 4 }))).toEqual({ min: 0, max: 4 });
    expect(replicaBounds(parsed({ max_replicas: 4 }))).toEqual({ min: 1, max: 4 });
    expect(replicaBounds(parsed({ min_replicas: 2 }))).toEqual({ min: 2, max: 2 });
    expect(parsed({}).autoscaling).toEqual({
      waiting_per_replica: 2,
      window_s: 30,
      idle_cooldown_s: 300,
      capacity_per_replica: 256,
      cold_start_wait_s: 60,
    });
  });

  it('refuses replicas with bounds, bounds upside down, and GPU ids with hosts, naming the field', () => {
    expect(() => parsed({ replicas: 2, max_replicas: 3 })).toThrow(
      /replicas: give replicas, or min_replicas and max_replicas, not both/,
    );
    expect(() => parsed({ min_replicas: 3, max_replicas: 2 })).toThrow(
      /max_replicas: max_replicas is below min_replicas/,
    );
    expect(() => parsed({ gpus: ['0'], hosts: [{ docker_host: 'unix:///var/run/docker.sock', gpus: ['0'] }] })).toThrow(
      /gpus: with hosts, gpus is the number/,
    );
    expect(() => parsed({ hosts: [] })).toThrow(/hosts/);
    expect(() => parsed({ hosts: [{ docker_host: 'tcp://gpu-1:2376' }, { docker_host: 'tcp://gpu-1:2376' }] })).toThrow(
      /hosts: each docker_host is listed once/,
    );
  });

  it('gives each host a GPU inventory and the NVIDIA runtime unless it says none', () => {
    expect(
      parsed({
        gpus: 2,
        hosts: [
          { docker_host: 'tcp://gpu-1:2376', gpus: ['0', '1'] },
          { docker_host: 'tcp://gpu-2:2376', gpu_runtime: 'none' },
        ],
      }).hosts,
    ).toEqual([
      { docker_host: 'tcp://gpu-1:2376', gpus: ['0', '1'], gpu_runtime: 'nvidia' },
      { docker_host: 'tcp://gpu-2:2376', gpus: [], gpu_runtime: 'none' },
    ]);
  });
});

describe("static engine definitions: the operator's own servers", () => {
  const fixed = (fields: Record<string, unknown>) =>
    parseEngineDefinitions(JSON.stringify({ engines: [{ kind: 'static', model: 'm', ...fields }] }))[0];

  it('takes one url, a list of urls, or a DNS name with its port (8000) and scheme (http)', () => {
    expect(fixed({ url: 'http://10.0.0.5:8000' })).toMatchObject({ url: 'http://10.0.0.5:8000' });
    expect(fixed({ urls: ['http://10.0.0.5:8000', 'http://10.0.0.6:8000/v1'] })).toMatchObject({
      urls: ['http://10.0.0.5:8000', 'http://10.0.0.6:8000/v1'],
    });
    expect(fixed({ dns: { name: 'vllm.ml.svc.cluster.local' } })).toMatchObject({
      dns: { name: 'vllm.ml.svc.cluster.local', port: 8000, scheme: 'http' },
    });
  });

  it('refuses none or several of them, an empty list and a name that is no host name', () => {
    expect(() => fixed({})).toThrow(/url: give one of url, urls or dns/);
    expect(() => fixed({ url: 'http://a:8000', dns: { name: 'vllm' } })).toThrow(/give one of url, urls or dns/);
    expect(() => fixed({ urls: [] })).toThrow(/urls/);
    expect(() => fixed({ dns: { name: 'http://vllm' } })).toThrow(/dns.name is a host name/);
  });
});

describe('tool and reasoning parsers', () => {
  it('carry vLLM flags onto a Docker engine command line, and default a simulator to auto tool choice', () => {
    const [docker, sim] = parseEngineDefinitions(
      JSON.stringify({
        engines: [
          {
            kind: 'docker',
            model: 'qwen3',
            image: 'vllm/vllm-openai:v0.11.0',
            hf_repo: 'Qwen/Qwen3-8B',
            tool_call_parser: 'hermes',
            reasoning_parser: 'qwen3',
            args: ['--max-model-len', '32768'],
          },
          { kind: 'simulator', model: 'sim-chat' },
        ],
      }),
    );
    expect(containerSpec(docker as DockerDefinition, 0, {}, 'test').Cmd).toEqual(
      expect.arrayContaining([
        '--enable-auto-tool-choice',
        '--tool-call-parser',
        'hermes',
        '--reasoning-parser',
        'qwen3',
      ]),
    );
    expect(sim).toMatchObject({ tool_call_parser: 'hermes' });
  });
});

describe('a simulator engine with a script', () => {
  it('reads the script relative to the definitions file, and the embedded simulator answers it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engines-'));
    try {
      writeFileSync(join(dir, 'turns.jsonl'), '{"content":"Scripted hello."}\n');
      writeFileSync(
        join(dir, 'engines.json'),
        JSON.stringify({ engines: [{ kind: 'simulator', model: 'agent-sim', script: 'turns.jsonl' }] }),
      );
      const definitions = (await readEngineDefinitions(join(dir, 'engines.json'))) as SimulatorDefinition[];
      expect(definitions[0]!.script).toBe(join(dir, 'turns.jsonl'));
      const { simulator } = await startSimulatorEngines(definitions, { ttftMs: 0, itlMs: 0 });
      try {
        const res = await fetch(`${simulator!.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'agent-sim', messages: [{ role: 'user', content: 'Hi' }] }),
        });
        expect(
          ((await res.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content,
        ).toBe('Scripted hello.');
      } finally {
        await simulator!.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
