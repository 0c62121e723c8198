import type { ToolExit } from '../runner.js';
import type { EgressPolicy } from './egress.js';

/** A bound a run can go over; going over one fails the run with a sentence naming it. */
export type BoundName = 'memory' | 'processes' | 'cpu' | 'disk';

/** What opening a run's sandbox takes. */
export interface SandboxRequest {
  runId: string;
  /** The run's folder on the host; its `work/` subfolder is all the tool may see and write. */
  folder: string;
  /** The OpenTofu or Terraform binary on the host. */
  tool: string;
  /** The tool's whole environment (never the gateway's). */
  env: Record<string, string>;
  egress: EgressPolicy;
  /** Lines for the run's log (what egress was refused, say). */
  say(line: string): void;
}

/** One command of a run, inside its sandbox. */
export interface SandboxCommand {
  args: string[];
  /** The working folder as the tool sees it. */
  cwd: string;
  signal: AbortSignal;
  killGraceMs: number;
  /** The output for the log: standard error, and standard output too unless `onStdout` takes it. */
  onOutput: (text: string) => void;
  /** Standard output as bytes (what the run hands back, read with a bound), kept out of the log. */
  onStdout?: (chunk: Buffer) => void;
  /** A `sh` script to run instead of the tool (printing what the run left, from inside). */
  script?: string;
}

/** A run's sandbox, open for its commands (`init`, `apply`, `output`). */
export interface RunSandbox {
  /** The run's `work/` folder as the tool sees it. */
  readonly workPath: string;
  exec(command: SandboxCommand): Promise<ToolExit>;
  /** The bounds the run has gone over so far. */
  exceeded(): Promise<BoundName[]>;
  /**
   * Stops whatever is left and releases the sandbox (the run's folder stays for the caller to
   * remove).
   */
  close(): Promise<void>;
}

/**
 * Where a run's tool executes. Every kind implements this: `docker` (a
 * container per run on the gateway's Docker engine), `bubblewrap`
 * (namespaces and a cgroup from Debian's packages) and `none` (the
 * operator's explicit opt-out).
 */
export interface Sandbox {
  readonly kind: 'docker' | 'bubblewrap' | 'none';
  /** How SSH reaches the cluster's nodes from inside (an HTTP CONNECT proxy), or null: directly. */
  readonly sshProxy: { scheme: string; host: string; port: number } | null;
  /** Where `work/` appears to the tool (the tfvars name files by this path). */
  workPathFor(folder: string): string;
  /** Prepares `folder` (ownership) and whatever the run needs around it. */
  open(request: SandboxRequest): Promise<RunSandbox>;
}
