import { spawn } from 'node:child_process';

/**
 * How a command of a run ended: its exit code, or the signal that ended it; `error` when it could
 * not start.
 */
export interface ToolExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: string;
}

export interface ToolCommand {
  bin: string;
  args: string[];
  cwd: string;
  /**
   * The whole environment the tool sees (never the gateway's own: it holds database URLs and
   * tokens).
   */
  env: Record<string, string>;
  /**
   * Aborting stops the tool: SIGINT to its process group (OpenTofu stops cleanly and releases its
   * lock), SIGKILL after `killGraceMs`.
   */
  signal: AbortSignal;
  killGraceMs: number;
  /**
   * Each piece of output as it arrives, stdout and stderr interleaved as they come (stderr only,
   * with `onStdout`).
   */
  onOutput: (text: string) => void;
  /** Standard output as bytes, apart from the log. */
  onStdout?: (chunk: Buffer) => void;
  /**
   * How to interrupt and then kill what runs, when not its process group
   * (a sandbox whose own processes must outlive the interrupt: they hold its
   * namespaces).
   */
  stop?: { interrupt(): Promise<void>; kill(): Promise<void> };
}

/**
 * Runs one command of the OpenTofu/Terraform command line in its own process
 * group (so the providers and provisioners it starts are signalled with it),
 * streaming its output. Resolves when the process has exited, whatever its
 * status; never rejects.
 *
 * @example
 * const exit = await runTool({ bin: 'tofu', args: ['init', '-input=false'], cwd, env, signal, killGraceMs: 10_000, onOutput: log.write });
 */
export function runTool(command: ToolCommand): Promise<ToolExit> {
  return new Promise((resolve) => {
    if (command.signal.aborted) return resolve({ code: null, signal: 'SIGINT', error: 'stopped before it started' });
    const child = spawn(command.bin, command.args, {
      cwd: command.cwd,
      env: command.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let killTimer: NodeJS.Timeout | undefined;
    const signalGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // the group has exited already
      }
    };
    const stop = () => {
      if (command.stop) void command.stop.interrupt();
      else signalGroup('SIGINT');
      killTimer = setTimeout(
        () => (command.stop ? void command.stop.kill() : signalGroup('SIGKILL')),
        command.killGraceMs,
      );
    };
    command.signal.addEventListener('abort', stop, { once: true });
    if (command.onStdout) child.stdout.on('data', command.onStdout);
    else child.stdout.setEncoding('utf8').on('data', command.onOutput);
    child.stderr.setEncoding('utf8').on('data', command.onOutput);
    let spawnError: string | undefined;
    child.on('error', (error) => {
      spawnError = error.message;
    });
    child.on('close', (code, signal) => {
      command.signal.removeEventListener('abort', stop);
      clearTimeout(killTimer);
      // Whatever the tool left running in its group (a provider it started) goes with it.
      if (signal !== null || command.signal.aborted) signalGroup('SIGKILL');
      resolve({ code, signal, ...(spawnError ? { error: spawnError } : {}) });
    });
  });
}
