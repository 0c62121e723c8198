import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The bounds a run's cgroup holds it to. */
export interface CgroupBounds {
  memoryBytes: number;
  processes: number;
  /** CPUs' worth of time per period (1.5: one and a half cores). */
  cpus: number;
}

/** What a run's cgroup has counted so far. */
export interface CgroupCounts {
  /** Processes the kernel's OOM killer ended because the group was at its memory bound. */
  oomKills: number;
  /** Forks refused because the group was at its process bound. */
  forksRefused: number;
  cpuSeconds: number;
}

/** One run's cgroup: the files a process is placed in, the counters read, and removal. */
export interface RunCgroup {
  /** The `cgroup.procs` files a process writes its pid to, one per hierarchy (v1 has several). */
  procsFiles: string[];
  counts(): Promise<CgroupCounts>;
  /** SIGKILLs every process still in the group. */
  killAll(): Promise<void>;
  /** Sends `signal` to the group's processes whose command name `which` accepts. */
  signalAll(signal: NodeJS.Signals, which: (name: string) => boolean): Promise<void>;
  remove(): Promise<void>;
}

const ROOT = '/sys/fs/cgroup';
const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct'] as const;

/**
 * Makes a cgroup for one run under `parent` (e.g. `tollgate-runs`), on
 * cgroup v2 (one unified tree, `parent` must be delegated to this process
 * with the memory, pids and cpu controllers) or v1 (one tree per
 * controller, as on hosts still booted with the legacy layout). Throws when
 * the gateway may not make one: the sandbox is then unavailable.
 *
 * @example
 * const group = await createRunCgroup('tollgate-runs', run.id, { memoryBytes: 2 ** 31, processes: 512, cpus: 1 });
 * spawn('sh', ['-c', `echo $$ > ${group.procsFiles[0]}; exec tool`]);
 */
export async function createRunCgroup(parent: string, name: string, bounds: CgroupBounds): Promise<RunCgroup> {
  return existsSync(path.join(ROOT, 'cgroup.controllers'))
    ? createV2(parent, name, bounds)
    : createV1(parent, name, bounds);
}

async function createV2(parent: string, name: string, bounds: CgroupBounds): Promise<RunCgroup> {
  const parentDir = path.join(ROOT, parent);
  await mkdir(parentDir, { recursive: true });
  // The parent hands its controllers down to the runs' groups (it holds no process itself).
  await writeFile(path.join(parentDir, 'cgroup.subtree_control'), '+memory +pids +cpu');
  const dir = path.join(parentDir, name);
  await mkdir(dir);
  try {
    await writeFile(path.join(dir, 'memory.max'), String(bounds.memoryBytes));
    await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => {});
    await writeFile(path.join(dir, 'pids.max'), String(bounds.processes));
    await writeFile(path.join(dir, 'cpu.max'), `${Math.round(bounds.cpus * 100_000)} 100000`);
  } catch (error) {
    await rmdir(dir).catch(() => {});
    throw error;
  }
  return {
    procsFiles: [path.join(dir, 'cgroup.procs')],
    counts: () => readCounts({ unified: dir }),
    killAll: () => killProcessesIn([path.join(dir, 'cgroup.procs')]),
    signalAll: (signal, which) => signalProcessesIn([path.join(dir, 'cgroup.procs')], signal, which),
    remove: () => removeGroups([dir]),
  };
}

async function createV1(parent: string, name: string, bounds: CgroupBounds): Promise<RunCgroup> {
  const dirs = Object.fromEntries(
    V1_CONTROLLERS.map((controller) => [controller, path.join(ROOT, controller, parent, name)]),
  ) as Record<(typeof V1_CONTROLLERS)[number], string>;
  const made: string[] = [];
  try {
    for (const dir of Object.values(dirs)) {
      await mkdir(dir, { recursive: true });
      made.push(dir);
    }
    await writeFile(path.join(dirs.memory, 'memory.limit_in_bytes'), String(bounds.memoryBytes));
    // With swap accounting, memory + swap gets the same bound: a run may not swap its way past it.
    await writeFile(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), String(bounds.memoryBytes)).catch(() => {});
    await writeFile(path.join(dirs.pids, 'pids.max'), String(bounds.processes));
    await writeFile(path.join(dirs.cpu, 'cpu.cfs_period_us'), '100000');
    await writeFile(path.join(dirs.cpu, 'cpu.cfs_quota_us'), String(Math.round(bounds.cpus * 100_000)));
  } catch (error) {
    await removeGroups(made);
    throw error;
  }
  const procsFiles = Object.values(dirs).map((dir) => path.join(dir, 'cgroup.procs'));
  return {
    procsFiles,
    counts: () => readCounts(dirs),
    killAll: () => killProcessesIn(procsFiles),
    signalAll: (signal, which) => signalProcessesIn([path.join(dirs.pids, 'cgroup.procs')], signal, which),
    remove: () => removeGroups(Object.values(dirs)),
  };
}

/** Where a group's counters are: one folder (v2), or one per controller (v1). */
type CounterDirs = { unified: string } | { memory: string; pids: string; cpuacct: string };

async function readCounts(dirs: CounterDirs): Promise<CgroupCounts> {
  if ('unified' in dirs) {
    const memory = await readKeyed(path.join(dirs.unified, 'memory.events'));
    const pids = await readKeyed(path.join(dirs.unified, 'pids.events'));
    const cpu = await readKeyed(path.join(dirs.unified, 'cpu.stat'));
    return { oomKills: memory.oom_kill ?? 0, forksRefused: pids.max ?? 0, cpuSeconds: (cpu.usage_usec ?? 0) / 1e6 };
  }
  const memory = await readKeyed(path.join(dirs.memory, 'memory.oom_control'));
  const pids = await readKeyed(path.join(dirs.pids, 'pids.events'));
  const usage = Number((await readFile(path.join(dirs.cpuacct, 'cpuacct.usage'), 'utf8').catch(() => '0')).trim());
  return { oomKills: memory.oom_kill ?? 0, forksRefused: pids.max ?? 0, cpuSeconds: usage / 1e9 };
}

/**
 * The counters of the cgroup a process is in (a container's init, say: Docker
 * made the group), found from `/proc/<pid>/cgroup`; null when this process
 * cannot see it (another PID namespace, or `/sys/fs/cgroup` not mounted here).
 * On cgroup v1 each controller's line names its own hierarchy
 * (`12:pids:/docker/<id>` is `/sys/fs/cgroup/pids/docker/<id>`).
 *
 * @example
 * const group = await cgroupOfProcess(inspect.State.Pid);
 * const { forksRefused } = await group!.counts();
 */
export async function cgroupOfProcess(pid: number): Promise<{ counts(): Promise<CgroupCounts> } | null> {
  const text = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => null);
  if (text === null) return null;
  const lines = text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, controllers = '', where = ''] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
      return { controllers: controllers.split(','), mount: controllers, where };
    });
  let dirs: CounterDirs | null = null;
  if (existsSync(path.join(ROOT, 'cgroup.controllers'))) {
    const unified = lines.find((line) => line.mount === '');
    if (unified) dirs = { unified: path.join(ROOT, unified.where) };
  } else {
    const dirOf = (controller: string) => {
      const line = lines.find((entry) => entry.controllers.includes(controller));
      return line ? path.join(ROOT, line.mount, line.where) : null;
    };
    const [memory, pids, cpuacct] = [dirOf('memory'), dirOf('pids'), dirOf('cpuacct')];
    if (memory && pids && cpuacct) dirs = { memory, pids, cpuacct };
  }
  const found = dirs;
  if (!found || !existsSync('unified' in found ? found.unified : found.pids)) return null;
  return { counts: () => readCounts(found) };
}

/** A cgroup file of `key value` lines as numbers (missing file: no keys). */
async function readKeyed(file: string): Promise<Record<string, number>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return Object.fromEntries(
    text
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter((parts) => parts.length === 2)
      .map(([key, value]) => [key!, Number(value)]),
  );
}

function killProcessesIn(procsFiles: string[]): Promise<void> {
  return signalProcessesIn(procsFiles, 'SIGKILL', () => true);
}

async function signalProcessesIn(
  procsFiles: string[],
  signal: NodeJS.Signals,
  which: (name: string) => boolean,
): Promise<void> {
  for (const file of procsFiles) {
    const pids = (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
    for (const pid of pids) {
      const name = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
      if (!which(name)) continue;
      try {
        process.kill(pid, signal);
      } catch {
        // gone already
      }
    }
  }
}

/**
 * Removes the groups once their last process is gone (the kernel refuses while one remains: retried
 * briefly).
 */
async function removeGroups(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        await rmdir(dir);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
        await killProcessesIn([path.join(dir, 'cgroup.procs')]);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}
