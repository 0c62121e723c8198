import { spawnSync } from 'node:child_process';
import { requireServices } from './services.js';

/**
 * Why an agent's command cannot be run here, or null when it can: its `--version` answers. Missing
 * under REQUIRE_SERVICES=1 is an error (CI installs the agents, pinned, in `.ci/run`).
 *
 * @example
 * const missing = agentMissing('claude', 'Claude Code');
 */
export function agentMissing(command: string, name: string): string | null {
  const probe = spawnSync(command, ['--version'], { stdio: 'ignore', timeout: 30_000 });
  if (!probe.error && probe.status === 0) return null;
  const why = `${name} (\`${command}\`) cannot be run: ${probe.error ? probe.error.message : `exit status ${probe.status}`}`;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`);
  return `${why}; install it with npm install -g (see .ci/run)`;
}
