import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';

/**
 * Test images made without pulling anything: a root filesystem of this
 * machine's binaries and the shared libraries ldd lists for them, then
 * `docker import`ed (the simulator image, the runner image).
 */

const run = promisify(execFile);

/**
 * Copies each binary's contents (symlinks followed) to its path under
 * `rootfs`, mode 0755, and every library ldd lists for the dynamic ones
 * (loader included) to its own path. A static binary needs none.
 *
 * @example
 * await copyBinaries(rootfs, [{ source: process.execPath, target: '/usr/local/bin/node' }]);
 */
export async function copyBinaries(rootfs: string, binaries: Array<{ source: string; target: string }>): Promise<void> {
  const libraries = new Set<string>();
  for (const { source, target } of binaries) {
    await copyInto(rootfs, source, target);
    for (const library of await librariesOf(source)) libraries.add(library);
  }
  for (const library of libraries) await copyInto(rootfs, library, library);
}

async function copyInto(rootfs: string, source: string, target: string): Promise<void> {
  const dest = path.join(rootfs, target);
  await mkdir(path.dirname(dest), { recursive: true });
  await copyFile(await realpath(source), dest);
  await chmod(dest, 0o755);
}

/** The libraries ldd lists for a binary, loader included; none for a static one. */
async function librariesOf(binary: string): Promise<string[]> {
  let stdout: string;
  try {
    ({ stdout } = await run('ldd', [binary]));
  } catch (error) {
    const { stdout: out = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    if (/not a dynamic executable|statically linked/.test(`${out}${stderr}`)) return [];
    throw error;
  }
  if (/statically linked/.test(stdout)) return [];
  const libraries: string[] = [];
  for (const line of stdout.split('\n')) {
    // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2
    // (0x...)"
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(line);
    if (match?.[1]) libraries.push(match[1]);
    else if (/not found/.test(line)) throw new Error(`ldd ${binary}: ${line.trim()}`);
  }
  if (!libraries.some((lib) => /\/ld-linux|\/ld-musl|\/ld64/.test(lib)))
    throw new Error(`ldd ${binary} lists no dynamic loader:\n${stdout}`);
  return libraries;
}

/**
 * Tars `rootfs` (owned by root) and imports it as `repo:tag` with the given
 * Dockerfile-style changes; resolves once the tag exists.
 *
 * @example
 * await importRootfs(docker, rootfs, { repo: 'tollgate-test/runner', tag: hash, message: 'runner', changes: ['CMD ["/bin/sh"]'] });
 */
export async function importRootfs(
  docker: Docker,
  rootfs: string,
  image: { repo: string; tag: string; message: string; changes: string[] },
): Promise<void> {
  const tar = `${rootfs}.tar`;
  await run('tar', ['--numeric-owner', '--owner=0', '--group=0', '-C', rootfs, '-cf', tar, '.']);
  const stream = await docker.importImage(tar, {
    repo: image.repo,
    tag: image.tag,
    message: image.message,
    changes: image.changes,
  });
  await followProgress(docker, stream);
  if (!(await imageExists(docker, `${image.repo}:${image.tag}`)))
    throw new Error(`docker import finished but ${image.repo}:${image.tag} does not exist`);
}

export async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw error;
  }
}

/** Waits for a pull/import progress stream to end; rejects on an error in it. */
function followProgress(docker: Docker, stream: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: Array<{ error?: string; errorDetail?: { message?: string } }>) => {
        if (error) return reject(error);
        const failed = events.find((event) => event.error || event.errorDetail);
        if (failed) return reject(new Error(`docker import: ${failed.error ?? failed.errorDetail?.message}`));
        resolve();
      },
    );
  });
}
