import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { freePort, repoRoot } from './processes.js';
import { copyBinaries, imageExists, importRootfs } from './rootfs.js';
import { requireServices } from './services.js';

/**
 * Docker for tests: whether an engine answers, and a local image of the vLLM
 * simulator built from this checkout without pulling anything (node binary,
 * its shared libraries and the bundled simulator, `docker import`ed).
 */

const run = promisify(execFile);

/** The engine tests talk to (the local socket; TEST_DOCKER_SOCKET overrides). */
export const dockerSocket = process.env.TEST_DOCKER_SOCKET ?? '/var/run/docker.sock';

/** A dockerode client for the test engine. */
export function testDocker(): Docker {
  return new Docker({ socketPath: dockerSocket, timeout: 120_000 });
}

let dockerCheck: Promise<boolean> | undefined;

/**
 * True when the Docker engine answers a ping. Otherwise skips with a line
 * saying why, or throws when REQUIRE_SERVICES=1.
 */
export function dockerAvailable(): Promise<boolean> {
  dockerCheck ??= (async () => {
    try {
      await new Docker({ socketPath: dockerSocket, timeout: 3_000 }).ping();
      return true;
    } catch (error) {
      const why = `Docker at ${dockerSocket} does not answer: ${(error as Error).message}`;
      if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`, { cause: error });
      console.warn(`skipping Docker tests: ${why}`);
      return false;
    }
  })();
  return dockerCheck;
}

/** The repository of simulator images; tags are content hashes. */
export const SIM_IMAGE_REPO = 'tollgate-test/vllm-sim';

/** Where the image keeps node and the simulator. */
export const SIM_IMAGE_NODE = '/usr/local/bin/node';
export const SIM_IMAGE_SCRIPT = '/app/sim.mjs';

/**
 * The simulator image's command before vLLM's arguments:
 * `[...SIM_IMAGE_COMMAND, 'org/model', '--served-model-name', 'x', '--port', '8000']`.
 * `/usr/local/bin/vllm` links to the script too, so `Entrypoint: ['vllm', 'serve']`
 * with vLLM's Cmd works as on the real image.
 */
export const SIM_IMAGE_COMMAND: readonly string[] = [SIM_IMAGE_NODE, SIM_IMAGE_SCRIPT];

/** Bump when the image's layout changes, so old tags are not reused. */
const RECIPE = 'vllm-sim-image-v1';

let simImage: Promise<string> | undefined;

/**
 * Builds (once per content) the simulator image and returns its tag,
 * `tollgate-test/vllm-sim:<hash of bundle, node version and recipe>`;
 * an existing tag is reused. Pulls nothing: the root filesystem is this
 * machine's node binary, the shared libraries ldd lists for it, and
 * src/sim/main.ts bundled by esbuild.
 *
 * @example
 * const image = await buildSimulatorImage();
 * await docker.createContainer({ Image: image, Cmd: [...SIM_IMAGE_COMMAND, 'm', '--port', '18000'], HostConfig: { NetworkMode: 'host' } });
 */
export function buildSimulatorImage(): Promise<string> {
  simImage ??= buildImage().catch((error: unknown) => {
    simImage = undefined;
    throw error;
  });
  return simImage;
}

async function buildImage(): Promise<string> {
  const work = await mkdtemp(path.join(tmpdir(), 'tollgate-sim-image-'));
  try {
    const rootfs = path.join(work, 'rootfs');
    const bundle = path.join(rootfs, SIM_IMAGE_SCRIPT);
    await bundleSimulator(bundle);

    const hash = createHash('sha256')
      .update(RECIPE)
      .update('\0')
      .update(process.version)
      .update('\0')
      .update(await readFile(bundle))
      .digest('hex')
      .slice(0, 16);
    const tag = `${SIM_IMAGE_REPO}:${hash}`;
    const docker = testDocker();
    if (await imageExists(docker, tag)) return tag;

    await copyBinaries(rootfs, [{ source: process.execPath, target: SIM_IMAGE_NODE }]);
    await chmod(bundle, 0o755);
    await mkdir(path.join(rootfs, 'usr/local/bin'), { recursive: true });
    await symlink(SIM_IMAGE_SCRIPT, path.join(rootfs, 'usr/local/bin/vllm'));
    await mkdir(path.join(rootfs, 'tmp'), { mode: 0o1777 });
    await chmod(path.join(rootfs, 'tmp'), 0o1777);

    await importRootfs(docker, rootfs, {
      repo: SIM_IMAGE_REPO,
      tag: hash,
      message: `Tollgate vLLM simulator for tests (${process.version})`,
      changes: [`CMD ${JSON.stringify(SIM_IMAGE_COMMAND)}`, 'ENV PATH=/usr/local/bin', 'WORKDIR /app'],
    });
    return tag;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** src/sim/main.ts as one ESM file for plain node, starting with a shebang for the `vllm` link. */
async function bundleSimulator(outfile: string): Promise<void> {
  const esbuild = path.join(repoRoot, 'node_modules/.bin/esbuild');
  const banner = [
    `#!${SIM_IMAGE_NODE}`,
    "import { createRequire as __simCreateRequire } from 'node:module';",
    'const require = __simCreateRequire(import.meta.url);',
  ].join('\n');
  await run(
    esbuild,
    [
      path.join(repoRoot, 'src/sim/main.ts'),
      '--bundle',
      '--platform=node',
      '--format=esm',
      `--target=node${process.versions.node.split('.')[0]}`,
      '--log-level=warning',
      `--banner:js=${banner}`,
      `--outfile=${outfile}`,
    ],
    { cwd: repoRoot },
  );
}

/**
 * A first port with `count` consecutive free ports on 127.0.0.1: Docker
 * engines on the host network put replica i on `port + i`.
 *
 * @example
 * const port = await freePortRange(3); // replicas 0, 1, 2 on port, port + 1, port + 2
 */
export async function freePortRange(count: number): Promise<number> {
  for (;;) {
    const port = await freePort();
    const free = await Promise.all(Array.from({ length: count - 1 }, (_, i) => portFree(port + i + 1)));
    if (free.every(Boolean)) return port;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
