import type { Config } from '../../config/index.js';
import type { RunSandbox, Sandbox, SandboxCommand } from './sandbox/types.js';
import {
  BoundedBytes,
  printFileScript,
  type Produced,
  producedByScript,
  readHostFile,
  storableValue,
} from './untrusted.js';
import type { Workspace } from './workspace.js';

/**
 * The bounds on what a run hands back (TOLLGATE_RUN_STATE_MB, TOLLGATE_RUN_OUTPUT_KB,
 * TOLLGATE_RUN_OUTPUTS_KB, TOLLGATE_RUN_LOG_MB).
 */
export type ProducedBounds = Config['runs']['produced'];

const STATE_FILE = 'terraform.tfstate';

const mib = (bytes: number) => `${Math.round(bytes / 1024 / 1024)} MiB`;
const kib = (bytes: number) => `${Math.round(bytes / 1024)} KiB`;

/**
 * The state the run left, as bytes printed from inside its sandbox (at most
 * TOLLGATE_RUN_STATE_MB, within the run's timeout), never a file the
 * gateway opens by its path; in the `none` sandbox, read on the host without
 * following a link (see `readHostFile`). Its own time bound, not the run's
 * signal: a stopped run's state is still worth keeping (the worker records
 * a stopped run as ended within the kill grace whatever this read does).
 *
 * @example
 * const state = await readRunState({ sandbox, box, workspace, bounds, timeoutMs: 1_800_000 });
 */
export async function readRunState(options: {
  sandbox: Sandbox;
  box: RunSandbox;
  workspace: Workspace;
  bounds: ProducedBounds;
  timeoutMs: number;
}): Promise<Produced> {
  const { bounds, workspace } = options;
  const within = options.timeoutMs;
  if (options.sandbox.kind === 'none') {
    return readHostFile(
      workspace.folder,
      `${workspace.moduleDir.slice(workspace.folder.length + 1)}/${STATE_FILE}`,
      bounds.stateBytes,
      within,
    );
  }
  const stop = new AbortController();
  const sink = new BoundedBytes(bounds.stateBytes, () => stop.abort());
  const exit = await options.box.exec({
    args: [],
    script: printFileScript(STATE_FILE, bounds.stateBytes),
    cwd: workspace.visibleModuleDir,
    signal: AbortSignal.any([stop.signal, AbortSignal.timeout(within)]),
    killGraceMs: 1000,
    onOutput: () => {},
    onStdout: (chunk) => sink.push(chunk),
  });
  return producedByScript(exit.code, sink, bounds.stateBytes);
}

/**
 * The sentence a state that cannot be kept fails the run with; null when it is kept (or there is
 * none).
 */
export function stateFailure(state: Produced, bounds: ProducedBounds): string | null {
  const lost = 'it was not kept, and the cluster may be partly changed';
  if (state.kind === 'not-regular')
    return `Its state (${STATE_FILE}) is not a regular file (a link, a FIFO or a device): ${lost}.`;
  if (state.kind === 'too-large')
    return `Its state is larger than TOLLGATE_RUN_STATE_MB (${mib(bounds.stateBytes)}): ${lost}.`;
  if (state.kind === 'failed') return `Its state could not be read (${state.why}): ${lost}.`;
  return null;
}

/**
 * `output -json` as name → value, from the tool's standard output only (its
 * warnings on standard error go to the log), read up to
 * TOLLGATE_RUN_OUTPUTS_KB: past it, no outputs; an output whose value is
 * longer than TOLLGATE_RUN_OUTPUT_KB is kept as null. Sensitive outputs are
 * null (their value never leaves the run). Every string is storable (see
 * `storable`). Each bound gone past is a line in the log naming it.
 *
 * @example
 * const outputs = await readOutputs(tool, bounds, say);
 */
export async function readOutputs(
  tool: (
    args: string[],
    extra: Pick<SandboxCommand, 'onStdout' | 'signal'>,
  ) => Promise<{ code: number | null; error?: string }>,
  signal: AbortSignal,
  bounds: ProducedBounds,
  say: (line: string) => void,
): Promise<Record<string, unknown> | null> {
  const stop = new AbortController();
  const sink = new BoundedBytes(bounds.outputsBytes, () => stop.abort());
  const exit = await tool(['output', '-json', '-no-color'], {
    onStdout: (chunk) => sink.push(chunk),
    signal: AbortSignal.any([signal, stop.signal]),
  });
  if (sink.over) {
    say(
      `The outputs are larger than TOLLGATE_RUN_OUTPUTS_KB (${kib(bounds.outputsBytes)}) as \`output -json\` prints them; the run is applied without them.`,
    );
    return null;
  }
  const parsed = exit.code === 0 && !exit.error ? parseOutputs(sink.bytes().toString('utf8')) : null;
  if (parsed === null) {
    say('The outputs could not be read (`output -json` failed); the run is applied without them.');
    return null;
  }
  const tooLong: string[] = [];
  const outputs = Object.fromEntries(
    Object.entries(parsed).map(([name, value]) => {
      if (value === null || Buffer.byteLength(JSON.stringify(value)) <= bounds.outputBytes) return [name, value];
      tooLong.push(name);
      return [name, null];
    }),
  );
  if (tooLong.length > 0)
    say(
      `Outputs longer than TOLLGATE_RUN_OUTPUT_KB (${kib(bounds.outputBytes)}) are kept as null: ${tooLong.join(', ')}.`,
    );
  return storableValue(outputs) as Record<string, unknown>;
}

function parseOutputs(json: string): Record<string, unknown> | null {
  try {
    const parsed = JSON.parse(json) as Record<string, { value?: unknown; sensitive?: boolean }>;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
    return Object.fromEntries(
      Object.entries(parsed).map(([name, output]) => [name, output?.sensitive ? null : (output?.value ?? null)]),
    );
  } catch {
    return null;
  }
}
