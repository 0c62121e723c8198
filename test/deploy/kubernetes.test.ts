import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseEngineDefinitions, type StaticDefinition } from '../../src/gateway/engines/definitions.js';
import { repoRoot } from '../helpers/processes.js';
import { requireServices } from '../helpers/services.js';

/**
 * deploy/kubernetes: every manifest validates against Kubernetes' schemas
 * (kubernetes-models' validators, a dev dependency from npm: nothing is
 * downloaded at run time), and says what the docs promise: probes, a
 * CPU autoscaler, a headless Service for vLLM with tool calling, the
 * operator's Secrets, and an engines file the gateway reads.
 */

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  [field: string]: unknown;
}

const folder = path.join(repoRoot, 'deploy/kubernetes');

async function manifests(): Promise<Manifest[]> {
  const files = (await readdir(folder)).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml');
  const documents = await Promise.all(
    files.map(async (file) => parseAllDocuments(await readFile(path.join(folder, file), 'utf8'))),
  );
  return documents.flat().map((document) => {
    expect(document.errors, 'YAML errors').toEqual([]);
    return document.toJS() as Manifest;
  });
}

/**
 * kubernetes-models' module for an apiVersion and kind: `apps/v1` + Deployment →
 * `kubernetes-models/apps/v1/Deployment`.
 */
async function validatorOf(manifest: Manifest): Promise<(value: unknown) => void> {
  const module = (await import(`kubernetes-models/${manifest.apiVersion}/${manifest.kind}`)) as Record<
    string,
    new (data: unknown) => { validate(): void }
  >;
  const Model = module[manifest.kind]!;
  return (value) => new Model(value).validate();
}

async function schemasAvailable(): Promise<boolean> {
  try {
    await import('kubernetes-models/apps/v1/Deployment');
    return true;
  } catch (error) {
    if (requireServices)
      throw new Error(`REQUIRE_SERVICES=1 but kubernetes-models cannot be loaded: ${(error as Error).message}`, {
        cause: error,
      });
    console.warn(
      `skipping the Kubernetes schema check: kubernetes-models cannot be loaded (${(error as Error).message})`,
    );
    return false;
  }
}

const find = (all: Manifest[], kind: string, name: string) =>
  all.find((m) => m.kind === kind && m.metadata.name === name) as any;

const withSchemas = await schemasAvailable();

describe('deploy/kubernetes', () => {
  it.runIf(withSchemas)("every manifest validates against Kubernetes' schemas", async () => {
    const all = await manifests();
    expect(all.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual([
      'ConfigMap/tollgate-engines',
      'Deployment/tollgate',
      'Deployment/vllm-qwen',
      'HorizontalPodAutoscaler/tollgate',
      'Service/tollgate',
      'Service/vllm-qwen',
    ]);
    for (const manifest of all) {
      const validate = await validatorOf(manifest);
      expect(() => validate(manifest), `${manifest.kind}/${manifest.metadata.name}`).not.toThrow();
    }
    // The check is a real one: a field of the wrong type is refused.
    const broken = structuredClone(find(all, 'Deployment', 'tollgate'));
    broken.spec.replicas = 'two';
    await expect(validatorOf(broken).then((validate) => validate(broken))).rejects.toThrow(/replicas must be integer/);
  });

  it('the gateway has readiness and liveness probes, a Service and an autoscaler on CPU; its secrets come from a Secret', async () => {
    const all = await manifests();
    const gateway = find(all, 'Deployment', 'tollgate').spec.template.spec.containers[0];
    expect(gateway.readinessProbe.httpGet).toMatchObject({ path: '/health/ready' });
    expect(gateway.livenessProbe.httpGet).toMatchObject({ path: '/health' });
    expect(find(all, 'Service', 'tollgate').spec.selector).toEqual(
      find(all, 'Deployment', 'tollgate').spec.selector.matchLabels,
    );
    expect(find(all, 'HorizontalPodAutoscaler', 'tollgate').spec.metrics).toEqual([
      expect.objectContaining({ type: 'Resource', resource: expect.objectContaining({ name: 'cpu' }) }),
    ]);
    const fromSecret = (name: string) =>
      gateway.env.find((e: { name: string }) => e.name === name)?.valueFrom?.secretKeyRef?.name;
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'TOLLGATE_ADMIN_TOKEN', 'VLLM_API_KEY'])
      expect(fromSecret(name), name).toBe('tollgate');
  });

  it("vLLM runs behind a headless Service that the gateway's dns engine names, with tool calling on", async () => {
    const all = await manifests();
    const service = find(all, 'Service', 'vllm-qwen');
    expect(service.spec.clusterIP).toBe('None');
    const vllm = find(all, 'Deployment', 'vllm-qwen').spec.template.spec.containers[0];
    expect(vllm.args).toEqual(expect.arrayContaining(['--enable-auto-tool-choice', '--tool-call-parser', 'hermes']));
    expect(vllm.readinessProbe.httpGet.path).toBe('/health');
    const [engine] = parseEngineDefinitions(
      find(all, 'ConfigMap', 'tollgate-engines').data['engines.json'],
    ) as StaticDefinition[];
    const namespace = /namespace: (\S+)/.exec(await readFile(path.join(folder, 'kustomization.yaml'), 'utf8'))![1];
    expect(engine!.dns).toEqual({
      name: `vllm-qwen.${namespace}.svc.cluster.local`,
      port: service.spec.ports[0].port,
      scheme: 'http',
    });
    expect(vllm.args).toContain(engine!.served_model_name);
  });
});
