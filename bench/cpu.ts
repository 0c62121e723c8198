import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';

/**
 * CPU time of processes from /proc (Linux only), in nanoseconds: the sum of
 * every thread's `se.sum_exec_runtime` (`/proc/PID/task/TID/schedstat`, first
 * field), which counts the libuv pool, V8's helper threads and the main thread
 * alike, to the nanosecond rather than the clock tick of `/proc/PID/stat`.
 */

/**
 * Something whose CPU the bench reads: a fixed process, or processes found again at each reading
 * (PostgreSQL's backends come and go).
 */
export interface CpuProbe {
  name: string;
  pids: () => Promise<number[]>;
}

/** One reading: per probe, per pid, nanoseconds of CPU so far. */
export type CpuReading = Map<string, Map<number, number>>;

/** CPU per probe over a span, in nanoseconds. */
export type CpuSpent = Record<string, number>;

/**
 * A process's CPU time so far in ns, all threads together; null once it has exited.
 *
 * @example
 * const ns = await processCpuNs(gateway.pid);
 */
export function processCpuNs(pid: number): Promise<number | null> {
  return schedstatSum(pid, SCHEDSTAT_RUNTIME_NS);
}

/**
 * Fields of `/proc/PID/task/TID/schedstat`: time on a CPU in ns, time waiting for one, times put on
 * one.
 */
const SCHEDSTAT_RUNTIME_NS = 0;
const SCHEDSTAT_RUNS = 2;
/**
 * `minflt` among the fields of `/proc/PID/stat` after the process's name: the tenth field, the
 * third's index 0.
 */
const MINFLT_AFTER_NAME = 7;

/** One field of `schedstat` summed over a process's threads; null once the process has exited. */
async function schedstatSum(pid: number, field: number): Promise<number | null> {
  let tids: string[];
  try {
    tids = await readdir(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const values = await Promise.all(
    tids.map(async (tid) => {
      try {
        return Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')).split(' ')[field]);
      } catch {
        return 0; // a thread that ended between the listing and the read
      }
    }),
  );
  return values.reduce((sum, value) => sum + value, 0);
}

/**
 * What a process asked of the kernel so far: read-like and write-like system calls (`syscr`,
 * `syscw` of `/proc/PID/io`: reads and writes on sockets, pipes and files) and how many times its
 * threads were put on a CPU (`/proc/PID/task/TID/schedstat`, third field: each is a wake-up, or a
 * return after being preempted) and its minor page faults (`minflt`, tenth field of
 * `/proc/PID/stat`: memory the kernel had to map in, as each fresh page of a string over V8's 128
 * KiB largest regular object is). Counts, not times: they barely move with the machine's load, so
 * they show a change in syscalls or wake-ups that CPU time on a shared VM hides in its noise.
 */
export interface ProcessActivity {
  readCalls: number;
  writeCalls: number;
  threadRuns: number;
  pageFaults: number;
}

/**
 * `ProcessActivity` so far of a process; null once it has exited, or where /proc/PID/io cannot be
 * read.
 *
 * @example
 * const before = await processActivity(gateway.pid);
 */
export async function processActivity(pid: number): Promise<ProcessActivity | null> {
  let io: string;
  try {
    io = await readFile(`/proc/${pid}/io`, 'utf8');
  } catch {
    return null;
  }
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? Number.NaN);
  const threadRuns = await schedstatSum(pid, SCHEDSTAT_RUNS);
  const pageFaults = await minorPageFaults(pid);
  if (threadRuns === null || pageFaults === null) return null;
  return { readCalls: field('syscr'), writeCalls: field('syscw'), threadRuns, pageFaults };
}

/** A process's minor page faults so far, all threads; null once it has exited. */
async function minorPageFaults(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The name (second field) may hold spaces: the fields after it are counted from its closing
    // parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[MINFLT_AFTER_NAME]);
  } catch {
    return null;
  }
}

/**
 * `after` less `before`; null when either is.
 *
 * @example
 * const spent = activityBetween(before, await processActivity(pid));
 */
export function activityBetween(before: ProcessActivity | null, after: ProcessActivity | null): ProcessActivity | null {
  if (!before || !after) return null;
  return {
    readCalls: after.readCalls - before.readCalls,
    writeCalls: after.writeCalls - before.writeCalls,
    threadRuns: after.threadRuns - before.threadRuns,
    pageFaults: after.pageFaults - before.pageFaults,
  };
}

/**
 * The sum of two spans' activity; null once either is unknown (a span not read must not look like a
 * quiet one).
 *
 * @example
 * total = addActivity(total, activityBetween(before, after));
 */
export function addActivity(
  into: ProcessActivity | null | undefined,
  more: ProcessActivity | null,
): ProcessActivity | null {
  if (into === null || !more) return null;
  if (into === undefined) return { ...more };
  return {
    readCalls: into.readCalls + more.readCalls,
    writeCalls: into.writeCalls + more.writeCalls,
    threadRuns: into.threadRuns + more.threadRuns,
    pageFaults: into.pageFaults + more.pageFaults,
  };
}

/**
 * Reads every probe's processes.
 *
 * @example
 * const before = await readCpu(probes);
 */
export async function readCpu(probes: CpuProbe[]): Promise<CpuReading> {
  const reading: CpuReading = new Map();
  for (const probe of probes) {
    const perPid = new Map<number, number>();
    for (const pid of await probe.pids()) {
      const ns = await processCpuNs(pid);
      if (ns !== null) perPid.set(pid, ns);
    }
    reading.set(probe.name, perPid);
  }
  return reading;
}

/**
 * CPU spent per probe between two readings. A process that appeared in
 * between counts from its start; one that exited in between is lost (its
 * last stretch of work with it).
 *
 * @example
 * const spent = cpuBetween(before, await readCpu(probes));
 */
export function cpuBetween(before: CpuReading, after: CpuReading): CpuSpent {
  const spent: CpuSpent = {};
  for (const [name, perPid] of after) {
    let total = 0;
    for (const [pid, ns] of perPid) total += ns - (before.get(name)?.get(pid) ?? 0);
    spent[name] = total;
  }
  return spent;
}

/** Adds `more` into `into`, probe by probe. */
export function addSpent(into: CpuSpent, more: CpuSpent): void {
  for (const [name, ns] of Object.entries(more)) into[name] = (into[name] ?? 0) + ns;
}

/**
 * A probe for one fixed process.
 *
 * @example
 * const probe = fixedProbe('gateway', gateway.pid);
 */
export function fixedProbe(name: string, pid: number): CpuProbe {
  return { name, pids: () => Promise.resolve([pid]) };
}

/**
 * A probe for every process with this exact command name (`pgrep -x`), looked
 * up at each reading: `postgres` is the postmaster, its helpers and one
 * backend per connection, together the server's cost.
 *
 * @example
 * const postgres = namedProbe('postgres', 'postgres');
 */
export function namedProbe(name: string, command: string): CpuProbe {
  return {
    name,
    pids: () =>
      new Promise((resolve) => {
        execFile('pgrep', ['-x', command], (error, stdout) => {
          // pgrep exits 1 when nothing matches: no process, no CPU.
          resolve(error && !stdout ? [] : stdout.split('\n').filter(Boolean).map(Number));
        });
      }),
  };
}
