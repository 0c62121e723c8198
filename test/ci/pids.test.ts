import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/processes.js';

/**
 * `.ci/run` stops only what it started, by the pid it recorded, and removes a
 * pid file another program left only when its pid is not that program any
 * more. Played here on `sleep` processes of the test's own, standing in for
 * dockerd and containerd (whose real ones this machine may be running).
 */
describe('.ci/pids.sh: processes stopped by recorded pid, never by name', () => {
  const started: Array<{ pid: number; kill(): void }> = [];
  let folder = '';

  afterEach(async () => {
    for (const child of started.splice(0)) child.kill();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  const sleeper = (seconds: number) => {
    const child = spawn('sleep', [String(seconds)], { stdio: 'ignore' });
    started.push({ pid: child.pid!, kill: () => child.kill('SIGKILL') });
    return child.pid!;
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !/^\S+ \(\S+\) Z/.test(spawnSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' }).stdout);
    } catch {
      return false;
    }
  };
  const shell = async (script: string) => {
    folder ||= await mkdtemp(path.join(os.tmpdir(), 'tollgate-ci-pids-'));
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', `. .ci/pids.sh\n${script}`], {
      cwd: repoRoot,
      env: { ...process.env, CI_PIDS: folder },
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    return run.stdout;
  };

  it('stops a recorded process that is still the program, and forgets it', async () => {
    const pid = sleeper(301);
    await shell(`record sleeper ${pid}; stop_recorded sleeper sleep 301`);
    await expect.poll(() => alive(pid)).toBe(false);
    await expect(readFile(path.join(folder, 'sleeper.pid'), 'utf8')).rejects.toThrow();
  });

  it('leaves running a recorded pid that another program (or another command line) has taken', async () => {
    const other = sleeper(302);
    await shell(
      `record dockerd ${other}; stop_recorded dockerd dockerd; record containerd ${other}; stop_recorded containerd sleep /var/run/docker/containerd/containerd.toml`,
    );
    expect(alive(other)).toBe(true);
  });

  it("removes another program's pid file only when its pid is not that program any more", async () => {
    const pid = sleeper(303);
    const file = path.join(await mkdtemp(path.join(os.tmpdir(), 'tollgate-ci-pidfile-')), 'docker.pid');
    try {
      await writeFile(file, String(pid));
      await shell(`drop_stale ${file} sleep 303`);
      expect(await readFile(file, 'utf8')).toBe(String(pid));
      await shell(`drop_stale ${file} dockerd`);
      await expect(readFile(file, 'utf8')).rejects.toThrow();
      expect(alive(pid)).toBe(true);
      for (const content of ['999999999', 'not a pid']) {
        await writeFile(file, content);
        await shell(`drop_stale ${file} dockerd`);
        await expect(readFile(file, 'utf8')).rejects.toThrow();
      }
    } finally {
      await rm(path.dirname(file), { recursive: true, force: true });
    }
  });

  it('.ci/run stops nothing by name', async () => {
    const script = await readFile(path.join(repoRoot, '.ci/run'), 'utf8');
    expect(script).not.toMatch(/\b(pkill|killall)\b/);
  });
});
