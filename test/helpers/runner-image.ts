import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findTool } from '../../src/platform/runs/tool.js';
import { testDocker } from './docker.js';
import { copyBinaries, imageExists, importRootfs } from './rootfs.js';

/**
 * A local stand-in for the runner image (compose/runner.Dockerfile) for the
 * docker sandbox's tests, built without pulling: this machine's terraform
 * or tofu (when it has one), node and the stand-in tool (the run tests' fake
 * `tofu`, a node script), a shell and the commands the run tests' scripts
 * use, socat, each with its ldd libraries, and an /etc/passwd with user
 * 65534; `docker import`ed under a tag that is a hash of its contents.
 */

export const RUNNER_IMAGE_REPO = 'tollgate-test/runner';

/** Bump when the image's layout changes, so old tags are not reused. */
const RECIPE = 'runner-image-v1';

/**
 * Commands the sandbox itself needs (sh, socat, grep, sleep, cat, head, timeout, kill is sh's) and
 * those the hostile tests' scripts run.
 */
const COMMANDS = [
  'sh',
  'bash',
  'socat',
  'cat',
  'ls',
  'id',
  'hostname',
  'tr',
  'grep',
  'head',
  'wc',
  'stat',
  'seq',
  'sleep',
  'touch',
  'env',
  'timeout',
  'true',
  'false',
  'mkdir',
  'rm',
  'echo',
  'ln',
  'mkfifo',
  'truncate',
  'yes',
];

let built: Promise<string> | undefined;

/**
 * Builds (once per content) the runner image and returns its tag.
 *
 * @example
 * const image = await buildRunnerImage('/work/test/platform/runs/fake-tofu.mjs');
 * loadConfig({ TOLLGATE_RUN_SANDBOX: 'docker', TOLLGATE_RUN_IMAGE: image });
 */
export function buildRunnerImage(fakeTool: string): Promise<string> {
  built ??= build(fakeTool).catch((error: unknown) => {
    built = undefined;
    throw error;
  });
  return built;
}

async function build(fakeTool: string): Promise<string> {
  const searchPath = process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin';
  const binaries = COMMANDS.map((name) => {
    const source = findTool({ configured: name, pathList: searchPath });
    if (!source) throw new Error(`the runner test image needs ${name}, which is not on PATH`);
    return { source, target: `/usr/bin/${name}` };
  });
  binaries.push({ source: process.execPath, target: '/usr/local/bin/node' });
  const tool = findTool({ pathList: searchPath });
  if (tool) binaries.push({ source: tool, target: `/usr/local/bin/${path.basename(tool)}` });
  const scripts = [{ source: fakeTool, target: `/usr/local/bin/${path.basename(fakeTool)}` }];

  const hash = createHash('sha256').update(RECIPE);
  for (const file of [...binaries, ...scripts])
    hash
      .update('\0')
      .update(file.target)
      .update('\0')
      .update(await digest(file.source));
  const tag = hash.digest('hex').slice(0, 16);
  const image = `${RUNNER_IMAGE_REPO}:${tag}`;
  const docker = testDocker();
  if (await imageExists(docker, image)) return image;

  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-runner-image-'));
  try {
    const rootfs = path.join(work, 'rootfs');
    await mkdir(path.join(rootfs, 'usr/bin'), { recursive: true });
    await symlink('usr/bin', path.join(rootfs, 'bin'));
    await copyBinaries(rootfs, binaries);
    for (const script of scripts) {
      await copyFile(script.source, path.join(rootfs, script.target));
      await chmod(path.join(rootfs, script.target), 0o755);
    }
    await mkdir(path.join(rootfs, 'etc'), { recursive: true });
    await writeFile(
      path.join(rootfs, 'etc/passwd'),
      'root:x:0:0:root:/root:/bin/sh\nrun:x:65534:65534:run:/workspace/home:/bin/sh\n',
    );
    await writeFile(path.join(rootfs, 'etc/group'), 'root:x:0:\nrun:x:65534:\n');
    for (const folder of ['tmp', 'workspace', 'run/tollgate', 'opt/tollgate/bin'])
      await mkdir(path.join(rootfs, folder), { recursive: true });
    await chmod(path.join(rootfs, 'tmp'), 0o1777);
    await importRootfs(docker, rootfs, {
      repo: RUNNER_IMAGE_REPO,
      tag,
      message: "Tollgate runner for tests (this machine's binaries)",
      changes: ['ENV PATH=/usr/local/bin:/usr/bin:/bin', 'USER 65534:65534', 'WORKDIR /workspace'],
    });
    return image;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

function digest(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('error', reject)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')));
  });
}
