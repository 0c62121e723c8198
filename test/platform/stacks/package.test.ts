import { describe, expect, it } from 'vitest';
import yazl from 'yazl';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { DEFAULT_PACKAGE_LIMITS, readStackPackage } from '../../../src/platform/stacks/package.js';

interface FileSpec {
  name: string;
  content: string | Buffer;
  /** Unix mode, e.g. 0o120777 for a symbolic link. */
  mode?: number;
}

/** A real .zip of `files`, made with yazl. */
function zipOf(files: FileSpec[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const file of files)
    zip.addBuffer(
      Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content),
      file.name,
      file.mode === undefined ? {} : { mode: file.mode },
    );
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('error', reject);
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/**
 * Replaces every occurrence of an entry name's bytes (same length), in local and central headers:
 * names yazl would refuse to write.
 */
function renamed(zip: Buffer, from: string, to: string): Buffer {
  expect(to.length).toBe(from.length);
  const out = Buffer.from(zip);
  let at = out.indexOf(from);
  while (at !== -1) {
    out.write(to, at);
    at = out.indexOf(from, at + 1);
  }
  return out;
}

/** Sets the "encrypted" bit of every entry, in local (offset 6) and central (offset 8) headers. */
function markedEncrypted(zip: Buffer): Buffer {
  const out = Buffer.from(zip);
  for (let at = 0; at < out.length - 4; at++) {
    const signature = out.readUInt32LE(at);
    if (signature === 0x04034b50) out.writeUInt16LE(out.readUInt16LE(at + 6) | 1, at + 6);
    if (signature === 0x02014b50) out.writeUInt16LE(out.readUInt16LE(at + 8) | 1, at + 8);
  }
  return out;
}

/** The 400 a package gets: its details, as `entry: rule`. */
async function refusalOf(
  zip: Buffer,
  options: Parameters<typeof readStackPackage>[1] = {},
): Promise<Array<{ field: string; message: string }>> {
  const error = await readStackPackage(zip, options).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GatewayError);
  expect((error as GatewayError).status).toBe(400);
  return (error as GatewayError).details!;
}

const MAIN_TF = `
variable "replicas" {
  type        = number
  default     = 2
  description = "How many replicas"
}
variable "domain" {
  type        = string
  description = "Public domain"
}
variable "image" {
  default = "vllm/vllm-openai:latest"
}
variable "gpus_per_node" {
  type = number
}
resource "null_resource" "noop" {}
`;

describe('stack packages', () => {
  it('derives the manifest from the module when there is none: name, title, README, inputs from variables', async () => {
    const zip = await zipOf([
      { name: 'vllm-serving/main.tf', content: MAIN_TF },
      {
        name: 'vllm-serving/README.md',
        content: '# vLLM serving\n\n![badge](x.svg)\n\nServes a model with vLLM\non every node.\n\nMore text.',
      },
      { name: 'vllm-serving/modules/child/main.tf', content: 'variable "ignored" {}' },
      // The platform's own variables are set on every run, not asked for.
      {
        name: 'vllm-serving/platform.tf',
        content:
          'variable "tollgate_cluster_id" { type = string }\nvariable "tollgate_node_addresses" { type = list(string) }',
      },
    ]);
    const read = await readStackPackage(zip, { fileName: 'upload.zip' });
    expect(read.fromManifest).toBe(false);
    expect(read.root).toBe('vllm-serving/');
    expect(read.manifest).toEqual({
      name: 'vllm-serving',
      title: 'Vllm Serving',
      description: 'Serves a model with vLLM on every node.',
      category: 'Custom',
      inputs: [
        { name: 'domain', type: 'string', required: true, description: 'Public domain' },
        { name: 'gpus_per_node', type: 'number', required: true },
        { name: 'image', type: 'string', required: false, default: 'vllm/vllm-openai:latest' },
        { name: 'replicas', type: 'number', required: false, default: 2, description: 'How many replicas' },
      ].sort((a, b) => a.name.localeCompare(b.name)),
    });
  });

  it('takes its name from the file name when the files sit at the top', async () => {
    const read = await readStackPackage(await zipOf([{ name: 'main.tf', content: 'variable "x" {}' }]), {
      fileName: 'My Monitoring.zip',
    });
    expect(read.manifest.name).toBe('my-monitoring');
    expect(read.manifest.inputs).toEqual([{ name: 'x', type: 'string', required: true }]);
  });

  it('uses the shallowest manifest.json: at depth 0 over one at depth 2, or the one at depth 2 alone', async () => {
    const manifest = (name: string) =>
      JSON.stringify({
        name,
        title: `Stack ${name}`,
        category: 'Monitoring',
        icon: '📈',
        inputs: [{ name: 'port', type: 'number', default: 3000 }],
      });
    const both = await readStackPackage(
      await zipOf([
        { name: 'manifest.json', content: manifest('top') },
        { name: 'main.tf', content: '' },
        { name: 'modules/inner/manifest.json', content: manifest('inner') },
      ]),
    );
    expect(both.manifest).toMatchObject({
      name: 'top',
      title: 'Stack top',
      category: 'Monitoring',
      icon: '📈',
      inputs: [{ name: 'port', type: 'number', required: false, default: 3000 }],
    });
    expect(both.root).toBe('');
    const deep = await readStackPackage(
      await zipOf([
        { name: 'a/b/manifest.json', content: manifest('deep') },
        { name: 'a/b/main.tf', content: '' },
      ]),
    );
    expect(deep).toMatchObject({ fromManifest: true, root: 'a/b/', manifest: { name: 'deep' } });
  });

  it("derives the name when the manifest has only the spec's fields (title, description, category, icon, inputs)", async () => {
    const spec = JSON.stringify({
      title: 'Slurm',
      description: 'A Slurm scheduler',
      category: 'Scheduler',
      icon: '🗓️',
      inputs: [{ name: 'partition', type: 'string', default: 'main' }],
    });
    const inFolder = await readStackPackage(
      await zipOf([
        { name: 'slurm-hpc/manifest.json', content: spec },
        { name: 'slurm-hpc/main.tf', content: 'variable "partition" {}' },
      ]),
      { fileName: 'upload.zip' },
    );
    expect(inFolder).toMatchObject({
      fromManifest: true,
      root: 'slurm-hpc/',
      manifest: {
        name: 'slurm-hpc',
        title: 'Slurm',
        category: 'Scheduler',
        icon: '🗓️',
        inputs: [{ name: 'partition', default: 'main' }],
      },
    });
    const atTop = await readStackPackage(
      await zipOf([
        { name: 'manifest.json', content: spec },
        { name: 'main.tf', content: '' },
      ]),
      { fileName: 'My Slurm.zip' },
    );
    expect(atTop.manifest.name).toBe('my-slurm');
    // A name in the manifest still wins.
    const named = await readStackPackage(
      await zipOf([
        { name: 'manifest.json', content: JSON.stringify({ name: 'chosen', title: 'Chosen' }) },
        { name: 'main.tf', content: '' },
      ]),
      { fileName: 'other.zip' },
    );
    expect(named.manifest.name).toBe('chosen');
    expect(
      await refusalOf(
        await zipOf([
          { name: 'manifest.json', content: spec },
          { name: 'main.tf', content: '' },
        ]),
        { fileName: '---.zip' },
      ),
    ).toEqual([
      {
        field: 'manifest.json',
        message: 'No name could be made from the file or folder name: give the manifest a name.',
      },
    ]);
  });

  it('lists a variable whose default is null as optional, without a default', async () => {
    const read = await readStackPackage(
      await zipOf([
        {
          name: 'main.tf',
          content:
            'variable "gpu" {\n  type    = string\n  default = null\n}\nvariable "replicas" {\n  type    = number\n  default = null\n}\nvariable "model" {}\n',
        },
      ]),
      { fileName: 'nulls.zip' },
    );
    expect(read.manifest.inputs).toEqual([
      { name: 'gpu', type: 'string', required: false },
      { name: 'model', type: 'string', required: true },
      { name: 'replicas', type: 'number', required: false },
    ]);
  });

  it('refuses two manifests at the same depth, naming both', async () => {
    const details = await refusalOf(
      await zipOf([
        { name: 'a/manifest.json', content: '{}' },
        { name: 'b/manifest.json', content: '{}' },
        { name: 'main.tf', content: '' },
      ]),
    );
    expect(details).toHaveLength(1);
    expect(details[0]!.message).toContain('a/manifest.json');
    expect(details[0]!.message).toContain('b/manifest.json');
  });

  it("checks a manifest with the API's rules, every field at once", async () => {
    const details = await refusalOf(
      await zipOf([
        {
          name: 'manifest.json',
          content: JSON.stringify({
            name: 'Bad Name',
            title: '',
            category: 'Games',
            icon: 'http://insecure.example/icon.png',
            inputs: [{ name: 'n', type: 'number', default: 'three' }],
            extra: 1,
          }),
        },
        { name: 'main.tf', content: '' },
      ]),
    );
    expect(details.map((d) => d.field).sort()).toEqual([
      'manifest.json: category',
      'manifest.json: extra',
      'manifest.json: icon',
      'manifest.json: inputs.0.default',
      'manifest.json: name',
      'manifest.json: title',
    ]);
    expect(
      await refusalOf(
        await zipOf([
          { name: 'manifest.json', content: '{not json' },
          { name: 'main.tf', content: '' },
        ]),
      ),
    ).toEqual([{ field: 'manifest.json', message: 'It is not valid JSON.' }]);
  });

  it('refuses a path that leaves the folder (zip slip) or starts at the root, naming it', async () => {
    const slip = renamed(
      await zipOf([
        { name: 'main.tf', content: '' },
        { name: 'aa/evil.tf', content: 'x' },
      ]),
      'aa/evil.tf',
      '../evil.tf',
    );
    expect((await refusalOf(slip))[0]!.field).toBe('../evil.tf');
    const absolute = renamed(
      await zipOf([
        { name: 'main.tf', content: '' },
        { name: 'xetc/cron.tf', content: 'x' },
      ]),
      'xetc/cron.tf',
      '/etc/cron.tf',
    );
    expect((await refusalOf(absolute))[0]!.field).toBe('/etc/cron.tf');
  });

  it('refuses a symbolic link and an encrypted entry, naming them', async () => {
    const link = await zipOf([
      { name: 'main.tf', content: '' },
      { name: 'link.tf', content: '/etc/passwd', mode: 0o120777 },
    ]);
    expect(await refusalOf(link)).toEqual([
      { field: 'link.tf', message: 'It is a symbolic link; packages hold plain files only.' },
    ]);
    const encrypted = markedEncrypted(await zipOf([{ name: 'main.tf', content: 'variable "x" {}' }]));
    expect(await refusalOf(encrypted)).toEqual([{ field: 'main.tf', message: 'It is encrypted; packages are not.' }]);
  });

  it('refuses a zip bomb: a small file with a huge uncompressed size', async () => {
    const bomb = await zipOf([
      { name: 'main.tf', content: '' },
      { name: 'zeros.bin', content: Buffer.alloc(20 * 1024 * 1024) },
    ]);
    expect(bomb.length).toBeLessThan(100 * 1024);
    const [detail] = await refusalOf(bomb);
    expect(detail).toMatchObject({
      field: 'zeros.bin',
      message: expect.stringMatching(/^It is compressed \d+ times; at most 100 is taken/),
    });
    // And the total: many entries that each compress modestly but add up past the limit.
    const limits = { ...DEFAULT_PACKAGE_LIMITS, maxUncompressedBytes: 1000 };
    expect(
      (
        await refusalOf(
          await zipOf([
            { name: 'main.tf', content: 'x'.repeat(600) },
            { name: 'more.tf', content: 'y'.repeat(600) },
          ]),
          { limits },
        )
      )[0]!.field,
    ).toBe('more.tf');
  });

  it('refuses a corrupt zip, one without a .tf file, an oversize upload and too many entries', async () => {
    expect((await refusalOf(Buffer.from('PK\u0003\u0004 not really a zip')))[0]!.field).toBe('package');
    const good = await zipOf([{ name: 'main.tf', content: 'variable "x" {}' }]);
    expect((await refusalOf(good.subarray(0, good.length - 10)))[0]!.field).toBe('package');
    expect(await refusalOf(await zipOf([{ name: 'README.md', content: '# nothing' }]))).toEqual([
      { field: 'package', message: 'It holds no .tf file: a stack is an OpenTofu or Terraform module.' },
    ]);
    const small = { ...DEFAULT_PACKAGE_LIMITS, maxZipBytes: 100 };
    expect((await refusalOf(good, { limits: small }))[0]!.message).toMatch(/at most 100 are taken/);
    const few = { ...DEFAULT_PACKAGE_LIMITS, maxEntries: 2 };
    expect(
      (
        await refusalOf(
          await zipOf([
            { name: 'a.tf', content: '' },
            { name: 'b.tf', content: '' },
            { name: 'c.tf', content: '' },
          ]),
          { limits: few },
        )
      )[0]!.message,
    ).toBe('It has 3 entries; at most 2 are taken.');
  });

  it('refuses a .tf file that is not HCL, naming it', async () => {
    expect((await refusalOf(await zipOf([{ name: 'main.tf', content: 'variable "x" {' }])))[0]!.field).toBe('main.tf');
  });
});
