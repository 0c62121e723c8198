import { runTool, type ToolExit } from '../runner.js';
import type { BoundName, RunSandbox, Sandbox, SandboxCommand, SandboxRequest } from './types.js';

/**
 * The opt-out (`TOLLGATE_RUN_SANDBOX=none`): the tool runs as the gateway's
 * user on the gateway's host, with only the environment it is given. A
 * stack's code can then read the gateway's files and reach its network; the
 * gateway warns at every start.
 */
export class Unsandboxed implements Sandbox {
  readonly kind = 'none';
  readonly sshProxy = null;

  workPathFor(folder: string): string {
    return `${folder}/work`;
  }

  async open(request: SandboxRequest): Promise<RunSandbox> {
    const workPath = this.workPathFor(request.folder);
    return {
      workPath,
      exec: (command: SandboxCommand): Promise<ToolExit> =>
        runTool({
          bin: command.script ? '/bin/sh' : request.tool,
          args: command.script ? ['-c', command.script] : command.args,
          cwd: command.cwd,
          env: { ...request.env, HOME: workPath },
          signal: command.signal,
          killGraceMs: command.killGraceMs,
          onOutput: command.onOutput,
          onStdout: command.onStdout,
        }),
      exceeded: async (): Promise<BoundName[]> => [],
      close: async () => {},
    };
  }
}
