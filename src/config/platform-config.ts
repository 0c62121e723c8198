import os from 'node:os';
import path from 'node:path';
import type { Settings } from './settings.js';
import type { Config } from './types.js';

/** The platform's settings as `loadConfig` makes them: uploads, people's sessions, and runs. */

/**
 * Stack uploads: how many one process and one user read at once, and how much one user keeps
 * (TOLLGATE_UPLOADS_*, TOLLGATE_STACKS_*).
 */
export function uploadsConfig(s: Settings): Config['uploads'] {
  return {
    inFlight: s.TOLLGATE_UPLOADS_IN_FLIGHT,
    inFlightPerUser: s.TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER,
    stacksPerUser: s.TOLLGATE_STACKS_PER_USER,
    stacksBytesPerUser: s.TOLLGATE_STACKS_BYTES_PER_USER,
  };
}

/** Adding a stack by URL: whether http:// and private addresses are allowed. */
export function stackDownloadsConfig(s: Settings): Config['stackDownloads'] {
  return {
    allowHttp: s.TOLLGATE_STACK_URL_ALLOW_HTTP === 'true',
    allowPrivate: s.TOLLGATE_STACK_URL_ALLOW_PRIVATE === 'true',
  };
}

/** Passwords, sessions, and the proxies whose forwarded client address is believed. */
export function peopleConfig(s: Settings): Config['people'] {
  return {
    passwordCost: s.TOLLGATE_PASSWORD_COST,
    sessionIdleMs: s.TOLLGATE_SESSION_IDLE_MINUTES * 60_000,
    sessionMaxMs: s.TOLLGATE_SESSION_MAX_HOURS * 3_600_000,
    trustedProxies: s.TOLLGATE_TRUSTED_PROXIES.split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  };
}

/**
 * The runs' settings: the tool, the workers, and the sandbox a run executes in with its bounds and
 * egress.
 */
export function runsConfig(s: Settings, present: Record<string, string | undefined>): Config['runs'] {
  return {
    tofuBin: s.TOLLGATE_TOFU_BIN,
    workers: s.TOLLGATE_RUN_WORKERS,
    timeoutMs: s.TOLLGATE_RUN_TIMEOUT_SECONDS * 1000,
    workDir: path.resolve(s.TOLLGATE_RUN_DIR ?? path.join(os.tmpdir(), 'tollgate-runs')),
    pollMs: s.TOLLGATE_RUN_POLL_MS,
    leaseMs: s.TOLLGATE_RUN_LEASE_MS,
    killGraceMs: s.TOLLGATE_RUN_KILL_GRACE_MS,
    searchPath: present.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    passEnv: Object.fromEntries(
      (s.TOLLGATE_RUN_ENV?.split(',') ?? []).flatMap((name) =>
        present[name] === undefined ? [] : [[name, present[name]]],
      ),
    ),
    sandbox: s.TOLLGATE_RUN_SANDBOX,
    image: s.TOLLGATE_RUN_IMAGE,
    dockerHost: s.TOLLGATE_RUN_DOCKER_HOST,
    sandboxUser: {
      uid: Number(s.TOLLGATE_RUN_SANDBOX_USER.split(':')[0]),
      gid: Number(s.TOLLGATE_RUN_SANDBOX_USER.split(':')[1]),
    },
    cgroup: s.TOLLGATE_RUN_CGROUP,
    bounds: {
      memoryBytes: s.TOLLGATE_RUN_MEMORY_MB * 1024 * 1024,
      processes: s.TOLLGATE_RUN_PROCESSES,
      cpus: s.TOLLGATE_RUN_CPUS,
      cpuSeconds: s.TOLLGATE_RUN_CPU_SECONDS,
      diskBytes: s.TOLLGATE_RUN_DISK_MB * 1024 * 1024,
    },
    produced: {
      logBytes: s.TOLLGATE_RUN_LOG_MB * 1024 * 1024,
      stateBytes: s.TOLLGATE_RUN_STATE_MB * 1024 * 1024,
      outputBytes: s.TOLLGATE_RUN_OUTPUT_KB * 1024,
      outputsBytes: s.TOLLGATE_RUN_OUTPUTS_KB * 1024,
    },
    egress: {
      hosts: s.TOLLGATE_RUN_EGRESS_HOSTS.split(',').map((entry) => ({
        host: entry.slice(0, entry.lastIndexOf(':')).toLowerCase(),
        port: Number(entry.slice(entry.lastIndexOf(':') + 1)),
      })),
      nodePorts: s.TOLLGATE_RUN_NODE_PORTS.split(',').map(Number),
    },
    providerMirror:
      s.TOLLGATE_RUN_PROVIDER_MIRROR === undefined ? undefined : path.resolve(s.TOLLGATE_RUN_PROVIDER_MIRROR),
    cliConfig: s.TOLLGATE_RUN_CLI_CONFIG === undefined ? undefined : path.resolve(s.TOLLGATE_RUN_CLI_CONFIG),
    mounts: (s.TOLLGATE_RUN_MOUNTS?.split(',') ?? []).map((entry) => {
      const [host, sandbox, mode] = entry.split(':') as [string, string, string | undefined];
      return { host: path.resolve(host), sandbox, writable: mode === 'rw' };
    }),
  };
}
