import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/shared/http/log.js';
import { readStackPackage } from '../../../src/platform/stacks/package.js';
import { loadShippedStacks } from '../../../src/platform/stacks/shipped.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

// By a name TypeScript does not follow: the parser's typings would pull the DOM's into the project
// (see src/platform/stacks/package.ts).
const HCL_PARSER = '@cdktn/hcl2json';
const parseHcl = async (name: string, text: string) =>
  ((await import(HCL_PARSER)) as { parse(n: string, t: string): Promise<unknown> }).parse(name, text);

describe('the stacks shipped in stacks/', () => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(() => gateway?.close());

  it('are global stacks of the catalog from the first start, one for every category the spec names, with their manifests', async () => {
    const shipped = (
      await gateway.services.stacks.list(
        { userId: 'nobody', orgId: 'none', role: 'member', platformAdmin: false },
        { offset: 0, limit: 100, sort: 'name' },
      )
    ).rows;
    expect(shipped.map((s) => [s.name, s.visibility, s.ownerId, s.category])).toEqual([
      ['k3s', 'global', null, 'Orchestration'],
      ['monitoring', 'global', null, 'Monitoring'],
      ['ray', 'global', null, 'ML Framework'],
      ['slurm', 'global', null, 'Scheduler'],
      ['vllm-serving', 'global', null, 'ML Framework'],
    ]);
    for (const category of ['Scheduler', 'Orchestration', 'ML Framework', 'Monitoring'])
      expect(shipped.map((s) => s.category)).toContain(category);
    for (const stack of shipped) {
      expect(stack.title, stack.name).not.toBe('');
      expect(stack.description, stack.name).not.toBe('');
      expect(stack.icon, stack.name).toBeTruthy();
    }
    // Every input of the four category stacks has a default: applying one needs no input at all.
    for (const stack of shipped.filter((s) => s.name !== 'vllm-serving')) {
      for (const input of stack.inputs)
        expect(input, `${stack.name}: ${input.name}`).toMatchObject({ required: false, default: expect.anything() });
    }
    const vllm = shipped.find((s) => s.name === 'vllm-serving')!;
    expect(vllm.inputs.filter((i) => i.required).map((i) => i.name)).toEqual(['model']);
    expect(vllm.inputs.find((i) => i.name === 'port')).toMatchObject({ type: 'number', default: 8000 });
  });

  it('reach the nodes only through the identity the platform injects: no input asks for a host, an address or a key', async () => {
    for (const stack of (
      await gateway.services.stacks.list(
        { userId: 'nobody', orgId: 'none', role: 'member', platformAdmin: false },
        { offset: 0, limit: 100, sort: 'name' },
      )
    ).rows) {
      for (const input of stack.inputs)
        expect(input.name, `${stack.name}: ${input.name}`).not.toMatch(/host|address|ssh|key|user/i);
    }
  });

  it('are real modules: every .tf file parses as HCL, and every declared input is a variable', async () => {
    for (const row of await gateway.services.stacks
      .list(
        { userId: 'nobody', orgId: 'none', role: 'member', platformAdmin: false },
        { offset: 0, limit: 100, sort: 'name' },
      )
      .then((r) => r.rows)) {
      // Read again as an upload would be: the derived inputs are the variables of its .tf files.
      const zip = Buffer.concat(await (await gateway.services.stacks.openPackage(row))!.toArray());
      const read = await readStackPackage(zip, { fileName: `${row.name}.zip` });
      expect(read.fromManifest).toBe(true);
      const yauzl = await import('yauzl');
      const files = await new Promise<Map<string, string>>((resolve, reject) => {
        yauzl.default.fromBuffer(zip, { lazyEntries: true }, (error, zip) => {
          if (error) return reject(error);
          const out = new Map<string, string>();
          zip.on('entry', (entry: import('yauzl').Entry) =>
            zip.openReadStream(entry, (e, stream) => {
              if (e) return reject(e);
              const chunks: Buffer[] = [];
              stream.on('data', (c: Buffer) => chunks.push(c));
              stream.on(
                'end',
                () => (out.set(entry.fileName, Buffer.concat(chunks).toString('utf8')), zip.readEntry()),
              );
            }),
          );
          zip.on('end', () => resolve(out));
          zip.readEntry();
        });
      });
      const variables = new Set<string>();
      for (const [name, text] of files) {
        if (!name.endsWith('.tf')) continue;
        const parsed = (await parseHcl(name, text)) as { variable?: Record<string, unknown> };
        for (const variable of Object.keys(parsed.variable ?? {})) variables.add(variable);
      }
      for (const input of row.inputs) expect(variables, `${row.name}: ${input.name}`).toContain(input.name);
      // Every declared variable that is not the platform's is an input of the manifest, so the
      // catalog shows it.
      for (const variable of variables)
        if (!variable.startsWith('tollgate_'))
          expect(
            row.inputs.map((i) => i.name),
            `${row.name}: ${variable}`,
          ).toContain(variable);
      for (const injected of [
        'tollgate_cluster_id',
        'tollgate_nodes',
        'tollgate_ssh_private_key_file',
        'tollgate_known_hosts_file',
        'tollgate_ssh_proxy',
        'tollgate_target_node',
      ])
        expect(variables, `${row.name}: ${injected}`).toContain(injected);
    }
  });

  it('are added once: loading again adds nothing', async () => {
    expect(await loadShippedStacks(gateway.services.stacks, createLogger('silent'))).toEqual([]);
  });
});
