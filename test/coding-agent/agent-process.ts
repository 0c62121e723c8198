import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../helpers/processes.js';

/** A running `tollgate code`, its output as it arrives. */
export interface AgentRun {
  stdout: string;
  stderr: string;
  /** stdout's complete lines parsed as JSON (stream-json). */
  events(): Array<Record<string, unknown>>;
  exit: Promise<number>;
  kill(): void;
}

/**
 * Starts `node bin/tollgate.mjs code …` in `cwd` with only the given
 * TOLLGATE_* settings (stdin a closed pipe: never a terminal).
 *
 * @example
 * const run = agent(['-p', 'fix it', '--output-format', 'stream-json'], env, project);
 * expect(await run.exit).toBe(0);
 */
export function agent(args: string[], env: Record<string, string>, cwd: string): AgentRun {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLGATE_') && name !== 'NO_COLOR'),
  );
  const child = spawn(process.execPath, [path.join(repoRoot, 'bin/tollgate.mjs'), 'code', ...args], {
    cwd,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: AgentRun = {
    stdout: '',
    stderr: '',
    events: () =>
      run.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
    exit: new Promise((resolve) => child.on('close', (code) => resolve(code ?? -1))),
    kill: () => child.kill('SIGKILL'),
  };
  child.stdout.on('data', (chunk: Buffer) => (run.stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString('utf8')));
  return run;
}
