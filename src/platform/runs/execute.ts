import type { Logger } from '../../shared/http/log.js';
import { describeError } from '../../shared/http/log.js';
import type { RunOutcome, RunRow } from './service.js';
import { RunLogWriter } from './log.js';
import type { ToolExit } from './runner.js';
import type { EgressPolicy } from './sandbox/egress.js';
import type { BoundName, RunSandbox, Sandbox, SandboxCommand } from './sandbox/types.js';
import { type ProducedBounds, readOutputs, readRunState, stateFailure } from './produced.js';
import { type ClusterContext, prepareWorkspace, type Workspace } from './workspace.js';

/** Why a run was stopped before its tool finished. */
export type StopReason = 'cancel' | 'timeout' | 'shutdown' | 'lost';

/** Everything one run needs besides the run itself, gathered by the worker. */
export interface RunJob {
  run: RunRow;
  /** The stack's package and the module's folder in it. */
  zip: Buffer;
  root: string;
  context: ClusterContext;
  state: Buffer | null;
  bin: string;
  workDir: string;
  env: Record<string, string>;
  /** What the tool runs in, and where it may connect from there. */
  sandbox: Sandbox;
  egress: EgressPolicy;
  /** The bounds' figures, for the sentence that names one the run went over. */
  bounds: { memoryBytes: number; processes: number; cpuSeconds: number; diskBytes: number };
  /** The bounds on what the run hands back: its log, its state, its outputs. */
  produced: ProducedBounds;
  killGraceMs: number;
  timeoutMs: number;
  signal: AbortSignal;
  /** Stores a piece of the log (see `RunService.appendLog`). */
  storeLog: (seq: number, text: string) => Promise<void>;
  saveState(state: Buffer): Promise<void>;
  log: Logger;
}

/**
 * Applies one claimed run: the module unpacked into a fresh folder, then
 * `init -input=false`, `apply -auto-approve -input=false` and `output -json`
 * with OpenTofu (or Terraform), the output stored as the run's log with its
 * secrets masked, the state kept for the next run, and the folder removed.
 * Answers how it ended; a stop (`signal`, whose reason is a `StopReason`)
 * interrupts the tool and ends the run CANCELED or FAILED.
 *
 * @example
 * const outcome = await executeRun(job);
 */
export async function executeRun(job: RunJob): Promise<RunOutcome> {
  const writer = new RunLogWriter(job.storeLog, [job.context.sshPrivateKey], {
    maxBytes: job.produced.logBytes,
    onError: (error) => job.log.warn('a run log piece was not stored', { runId: job.run.id, ...describeError(error) }),
  });
  const say = (line: string) => writer.note(`[tollgate] ${line}\n`);
  let workspace: Workspace | null = null;
  let box: RunSandbox | null = null;
  try {
    const target = job.context.targetNode
      ? `node ${job.context.targetNode}`
      : `the whole cluster (${job.context.nodeAddresses.length} nodes)`;
    say(`Applying stack ${job.run.stackName} to cluster ${job.context.clusterName} (${job.run.clusterId}), ${target}.`);
    workspace = await prepareWorkspace({
      workDir: job.workDir,
      visibleWork: (folder) => job.sandbox.workPathFor(folder),
      zip: job.zip,
      root: job.root,
      inputs: job.run.inputs,
      context: job.context,
      state: job.state,
    });
    writer.addSecrets(workspace.sensitiveValues);
    box = await job.sandbox.open({
      runId: job.run.id,
      folder: workspace.folder,
      tool: job.bin,
      env: job.env,
      egress: job.egress,
      say: (line) => say(line),
    });
    if (job.sandbox.kind === 'none')
      say(
        "This run is not sandboxed (TOLLGATE_RUN_SANDBOX=none): it runs as the gateway's user on the gateway's host.",
      );
    return await applyInSandbox(job, box, workspace, { writer, say });
  } catch (error) {
    job.log.error('a run failed before its tool finished', { runId: job.run.id, ...describeError(error) });
    const failure = `The run could not be prepared or recorded: ${error instanceof Error ? error.message.slice(0, 300) : 'unknown error'}.`;
    say(failure);
    return {
      state: 'FAILED',
      exitCode: null,
      failure: writer.mask(failure),
      outputs: null,
      publicUrl: null,
      webTarget: null,
    };
  } finally {
    await box
      ?.close()
      .catch((error: unknown) =>
        job.log.warn("a run's sandbox was not released cleanly", { runId: job.run.id, ...describeError(error) }),
      );
    await writer.close();
    await workspace?.remove();
  }
}

/**
 * What a run writes to its log: the tool's output (masked) through `writer`, and Tollgate's own
 * lines through `say`.
 */
interface RunLog {
  writer: RunLogWriter;
  say: (line: string) => void;
}

/**
 * The run in its open sandbox: `init`, then `apply` when it succeeded; the state read back and
 * kept; the outputs read when all went well; and the outcome, told in the log, its failure masked.
 */
async function applyInSandbox(
  job: RunJob,
  box: RunSandbox,
  workspace: Workspace,
  { writer, say }: RunLog,
): Promise<RunOutcome> {
  const cwd = workspace.visibleModuleDir;
  const tool = (args: string[]) =>
    box.exec({ args, cwd, signal: job.signal, killGraceMs: job.killGraceMs, onOutput: (text) => writer.write(text) });

  say(`$ ${toolName(job.bin)} init -input=false -no-color`);
  let exit = await tool(['init', '-input=false', '-no-color']);
  let step = 'init';
  if (succeeded(exit) && !job.signal.aborted) {
    say(`$ ${toolName(job.bin)} apply -auto-approve -input=false -no-color`);
    exit = await tool(['apply', '-auto-approve', '-input=false', '-no-color']);
    step = 'apply';
  }
  const state = await readRunState({
    sandbox: job.sandbox,
    box,
    workspace,
    bounds: job.produced,
    timeoutMs: job.timeoutMs,
  });
  if (state.kind === 'bytes') await job.saveState(state.bytes);
  let lostState = stateFailure(state, job.produced);
  // A run already stopped (a bound, a cancel) may leave no sandbox to read from: said in the log,
  // not a second reason.
  if (state.kind === 'failed' && (!succeeded(exit) || job.signal.aborted) && lostState) {
    say(lostState);
    lostState = null;
  }

  let outputs: Record<string, unknown> | null = null;
  if (succeeded(exit) && !job.signal.aborted && lostState === null) {
    const read = (args: string[], extra: Pick<SandboxCommand, 'onStdout' | 'signal'>) =>
      box.exec({ args, cwd, killGraceMs: job.killGraceMs, onOutput: (text) => writer.write(text), ...extra });
    outputs = await readOutputs(read, job.signal, job.produced, say);
  }
  const outcome = withLostState(
    overBounds(job, await box.exceeded(), exit.code) ?? ended(job, exit, step, outputs, workspace.manifestWebPort),
    lostState,
  );
  say(
    outcome.state === 'APPLIED'
      ? `Applied.${outcome.publicUrl ? ` Public URL: ${outcome.publicUrl}` : ''}`
      : `${outcome.state}: ${outcome.failure}`,
  );
  return { ...outcome, failure: outcome.failure === null ? null : writer.mask(outcome.failure) };
}

/** A run that went over a bound fails, whatever its tool said, with a sentence naming each bound. */
function overBounds(job: RunJob, bounds: BoundName[], exitCode: number | null): RunOutcome | null {
  if (bounds.length === 0) return null;
  const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
  const sentences: Record<BoundName, string> = {
    memory: `its memory bound (${mib(job.bounds.memoryBytes)}, TOLLGATE_RUN_MEMORY_MB)`,
    processes: `its process bound (${job.bounds.processes} processes, TOLLGATE_RUN_PROCESSES)`,
    cpu: `its CPU time bound (${job.bounds.cpuSeconds} s, TOLLGATE_RUN_CPU_SECONDS)`,
    disk: `its disk bound (${mib(job.bounds.diskBytes)} written, TOLLGATE_RUN_DISK_MB)`,
  };
  return {
    state: 'FAILED',
    exitCode,
    failure: `It went over ${bounds.map((bound) => sentences[bound]).join(' and ')} and was stopped; the cluster may be partly changed.`,
    outputs: null,
    publicUrl: null,
    webTarget: null,
  };
}

function ended(
  job: RunJob,
  exit: ToolExit,
  step: string,
  outputs: Record<string, unknown> | null,
  manifestWebPort: number | null,
): RunOutcome {
  const base = { exitCode: exit.code, outputs, publicUrl: null, webTarget: null };
  const reason = job.signal.aborted ? (job.signal.reason as StopReason) : null;
  if (reason === 'cancel')
    return { ...base, state: 'CANCELED', failure: 'Canceled while it ran; the cluster may be partly changed.' };
  if (reason === 'timeout')
    return {
      ...base,
      state: 'FAILED',
      failure: `It ran longer than ${Math.round(job.timeoutMs / 1000)} s and was stopped; the cluster may be partly changed.`,
    };
  if (reason === 'shutdown')
    return {
      ...base,
      state: 'FAILED',
      failure: 'The gateway applying it shut down; the cluster may be partly changed. Apply again.',
    };
  if (reason === 'lost') return { ...base, state: 'FAILED', failure: 'Its worker lost its claim on it.' };
  if (exit.error)
    return { ...base, state: 'FAILED', failure: `${toolName(job.bin)} could not be started (${exit.error}).` };
  if (!succeeded(exit))
    return {
      ...base,
      state: 'FAILED',
      failure: `${toolName(job.bin)} ${step} ${exit.code === null ? `was ended by ${exit.signal}` : `exited with ${exit.code}`}.`,
    };
  const webPort = webPortOf(outputs) ?? manifestWebPort;
  const node = job.context.targetNode || job.context.nodeAddresses[0];
  if (webPort === null || !node) return { ...base, state: 'APPLIED', failure: null };
  return {
    ...base,
    state: 'APPLIED',
    failure: null,
    publicUrl: `https://${job.run.stackName}.${job.context.publicDomain}`,
    webTarget: `${node}:${webPort}`,
  };
}

function succeeded(exit: ToolExit): boolean {
  return exit.code === 0 && !exit.error;
}

/**
 * A state that could not be kept fails an applied run, and is told after any other reason a run
 * failed.
 */
function withLostState(outcome: RunOutcome, lostState: string | null): RunOutcome {
  if (lostState === null) return outcome;
  if (outcome.state === 'APPLIED')
    return { ...outcome, state: 'FAILED', failure: lostState, outputs: null, publicUrl: null, webTarget: null };
  return { ...outcome, failure: `${outcome.failure ?? ''} ${lostState}`.trim() };
}

/** An output named `web_port` (a port number, or its digits) declares the web port to expose. */
function webPortOf(outputs: Record<string, unknown> | null): number | null {
  const value = outputs?.web_port;
  const port =
    typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : null;
  return port !== null && Number.isInteger(port) && port >= 1 && port <= 65535 ? port : null;
}

function toolName(bin: string): string {
  return bin.slice(bin.lastIndexOf('/') + 1);
}
