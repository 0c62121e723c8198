import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { runContainerSpec } from '../../../src/platform/runs/sandbox/docker-spec.js';
import { EGRESS_RELAY_PORT, INSIDE, relayScript, SANDBOX_UID } from '../../../src/platform/runs/sandbox/inside.js';
import { repoRoot } from '../../helpers/processes.js';

/**
 * compose/runner.Dockerfile against what the docker sandbox expects of the
 * image (inside.ts, docker-spec.ts): its user, its working folder, a mount
 * point for every mount of a run's container, and the commands the sandbox
 * runs in it. The image is built by operators, not by the tests (they use a
 * stand-in made from this machine's binaries), so only its text can be held
 * to the code.
 */

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(text: string): Instruction[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

const dockerfile = instructions(await readFile(path.join(repoRoot, 'compose/runner.Dockerfile'), 'utf8'));
const runs = dockerfile.filter((instruction) => instruction.keyword === 'RUN').map((instruction) => instruction.args);

/** Every folder a `mkdir -p` of a RUN makes, with the folders above it. */
function foldersMade(): Set<string> {
  const made = new Set<string>();
  for (const command of runs.flatMap((run) => run.split(/&&|;/))) {
    const words = command.trim().split(/\s+/);
    if (words[0] !== 'mkdir') continue;
    for (const word of words.slice(1).filter((w) => w.startsWith('/'))) {
      for (let folder = word; folder !== '/'; folder = path.posix.dirname(folder)) made.add(folder);
    }
  }
  return made;
}

/**
 * A run's container as the sandbox makes it, with a provider mirror and a CLI configuration so that
 * every mount is there.
 */
function runContainer() {
  return runContainerSpec(
    {
      docker: undefined as unknown as Docker,
      image: 'tollgate/runner:latest',
      user: { uid: SANDBOX_UID, gid: SANDBOX_UID },
      chown: true,
      bounds: { memoryBytes: 2 ** 31, processes: 512, cpus: 1, cpuSeconds: 900, diskBytes: 2 ** 31 },
      providerMirror: '/srv/providers',
      cliConfig: '/etc/tollgate/tofu.tfrc',
      mounts: [],
      lifetimeSeconds: 1900,
    },
    {
      runId: 'r1',
      folder: '/runs/r1',
      tool: '/usr/bin/tofu',
      env: {},
      egress: { nodes: [], hosts: [] },
      say: () => {},
    },
    {
      work: '/runs/r1/work',
      ctl: '/runs/r1/ctl',
      socket: '/tmp/tollgate-r1/egress.sock',
      socketDir: '/tmp/tollgate-r1',
      cliConfig: '/etc/tollgate/tofu.tfrc',
    },
  );
}

describe('compose/runner.Dockerfile matches the docker sandbox', () => {
  it(`runs as the sandbox's user (${SANDBOX_UID}), in the run's folder (${INSIDE.work})`, () => {
    const user = dockerfile.filter((instruction) => instruction.keyword === 'USER').at(-1)?.args;
    expect(user).toBe(`${SANDBOX_UID}:${SANDBOX_UID}`);
    expect(dockerfile.filter((instruction) => instruction.keyword === 'WORKDIR').at(-1)?.args).toBe(INSIDE.work);
    expect(runContainer().User).toBe(user);
  });

  it("makes a mount point for every mount of a run's container (a folder, or a file's folder)", () => {
    const made = foldersMade();
    const files: string[] = [INSIDE.egressSocket, INSIDE.cliConfig];
    const targets = runContainer().HostConfig!.Mounts!.map((mount) => mount.Target);
    expect(targets).toEqual(
      expect.arrayContaining([INSIDE.work, '/tmp', INSIDE.egressSocket, INSIDE.providers, INSIDE.cliConfig]),
    );
    // Debian's own /tmp is there already; every other one the Dockerfile makes.
    const missing = targets
      .map((target) => (files.includes(target) ? path.posix.dirname(target) : target))
      .filter((folder) => folder !== '/tmp' && !made.has(folder));
    expect(missing).toEqual([]);
  });

  it('installs what the sandbox runs in the container: socat (the relay), coreutils (timeout, cat, env, sleep), OpenTofu as tofu', () => {
    const installed = runs.join(' ');
    expect(relayScript()).toContain(`socat TCP-LISTEN:${EGRESS_RELAY_PORT}`);
    expect(installed).toMatch(/apt-get install[^&]*\bsocat\b/);
    expect(installed).toMatch(/apt-get install[^&]*\bcoreutils\b/);
    expect(runContainer().Entrypoint).toEqual([
      '/bin/sh',
      '-c',
      expect.stringMatching(/^exec timeout -s KILL \d+ cat >\/dev\/null$/),
    ]);
    expect(installed).toContain('tofu version');
  });
});
