/**
 * The settings of the platform's parts: people's sign-in, the nodes it reaches, and the runs that
 * apply stacks.
 */

/** How the platform reaches nodes (`src/platform/clusters/node-access.ts`). */
export interface NodeAccessSettings {
  /**
   * Seals operators' node credentials at rest (AES-256-GCM); unset: nodes cannot be given SSH
   * access.
   */
  credentialsKey?: Buffer;
  /** How long one SSH connection to a node (connect, authenticate, run) may take. */
  sshTimeoutMs: number;
}

/** Applying stacks to clusters (`src/platform/runs/`). */
export interface RunSettings {
  /**
   * The OpenTofu or Terraform command line: a path or a command name; unset: `tofu` on PATH, else
   * `terraform`.
   */
  tofuBin?: string;
  /** Runs this process applies at once; 0: it applies none (another process's workers do). */
  workers: number;
  /** A run still going after this long is stopped and FAILED. */
  timeoutMs: number;
  /** Where each run's module is unpacked, in a fresh folder removed afterwards. */
  workDir: string;
  /** How often a worker looks for queued runs, for cancel requests, and renews its claims. */
  pollMs: number;
  /** A claim not renewed for this long (its worker died) fails the run. */
  leaseMs: number;
  /** After SIGINT (cancel, timeout), how long the tool has to stop before SIGKILL. */
  killGraceMs: number;
  /**
   * Environment variables passed to the tool besides PATH, HOME and the TF_ ones it needs
   * (TOLLGATE_RUN_ENV), with their values.
   */
  passEnv: Record<string, string>;
  /** The gateway's PATH: where `tofu` or `terraform` is looked for, and the tool's own PATH. */
  searchPath: string;
  /**
   * What a run's tool runs in (`src/platform/runs/sandbox/`): docker (a container per run),
   * bubblewrap, none (the loudly named opt-out), or auto: docker when the engine at `dockerHost`
   * answers and holds `image`, else bubblewrap.
   */
  sandbox: 'auto' | 'docker' | 'bubblewrap' | 'none';
  /**
   * The runner image of the docker sandbox (compose/runner.Dockerfile): the tool, a shell,
   * coreutils, socat.
   */
  image: string;
  /**
   * The Docker engine the docker sandbox uses, on this machine (`unix://` and the socket's path;
   * engines.json's `docker_host` syntax).
   */
  dockerHost: string;
  /**
   * The host user and group the sandbox runs as when the gateway is root (inside it is always
   * 65534).
   */
  sandboxUser: { uid: number; gid: number };
  /**
   * The cgroup (relative to each hierarchy's root) under which each run gets its own group with the
   * bounds below.
   */
  cgroup: string;
  /** Bounds on one run: exceeding one fails it with a sentence naming the bound. */
  bounds: { memoryBytes: number; processes: number; cpus: number; cpuSeconds: number; diskBytes: number };
  /**
   * Bounds on what a run hands back, each read from a stream with its bound: its log (past it the
   * log is cut, saying so, and the run goes on), its state (past it the run fails and the state
   * is not kept), each output and the outputs together (past either the run is applied without
   * them, saying so).
   */
  produced: { logBytes: number; stateBytes: number; outputBytes: number; outputsBytes: number };
  /**
   * Where a run may connect: `host:port` names (registries, mirrors), and these ports on its
   * cluster's nodes.
   */
  egress: { hosts: Array<{ host: string; port: number }>; nodePorts: number[] };
  /** A folder of providers in the filesystem-mirror layout, mounted read-only into every run. */
  providerMirror?: string;
  /**
   * An OpenTofu/Terraform CLI configuration file (a network mirror, say), mounted read-only into
   * every run.
   */
  cliConfig?: string;
  /** Extra folders mounted into every run of every organization (read-only unless `rw`). */
  mounts: Array<{ host: string; sandbox: string; writable: boolean }>;
}

/** People's passwords and portal sessions, and the proxies believed about their addresses. */
export interface PeopleSettings {
  /** scrypt's cost as log2 N for new password hashes (15: 32 MiB, about 0.1 s each). */
  passwordCost: number;
  /** A portal session unused this long ends. */
  sessionIdleMs: number;
  /** A portal session ends this long after sign-in. */
  sessionMaxMs: number;
  /**
   * Proxies whose X-Forwarded-For (and X-Forwarded-Proto) are believed: addresses, CIDR ranges, or
   * proxy-addr's names. Empty: none.
   */
  trustedProxies: string[];
}
