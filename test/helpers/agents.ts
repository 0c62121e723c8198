import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type GatewayProcess, startGatewayProcess } from './processes.js';
import { requireServices } from './services.js';
import { until } from './wait.js';

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

/**
 * A gateway process on its embedded default whose one chat model answers from a script, and its
 * demo key.
 */
export interface ScriptedGateway {
  /** The temporary folder holding the script, the engines file and the data; removed by `stop`. */
  dir: string;
  gateway: GatewayProcess;
  key: string;
  stop(): Promise<void>;
}

/**
 * Starts `dist/main.js` on the embedded default with the demo data, its simulator's `sim-chat`
 * answering from `script` (JSON lines, `src/sim/script.ts`), as the agents' tests drive it.
 *
 * @example
 * const { gateway, key, stop } = await startScriptedGateway('codex', turnsJsonl);
 */
export async function startScriptedGateway(name: string, script: (dir: string) => string): Promise<ScriptedGateway> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `tollgate-${name}-`));
  await writeFile(path.join(dir, 'turns.jsonl'), script(dir));
  const engine = {
    kind: 'simulator',
    model: 'sim-chat',
    task: 'chat',
    tool_call_parser: 'hermes',
    max_model_len: 131072,
    script: 'turns.jsonl',
  };
  await writeFile(path.join(dir, 'engines.json'), JSON.stringify({ engines: [engine] }));
  const gateway = await startGatewayProcess(name, {
    TOLLGATE_DATA_DIR: path.join(dir, 'data'),
    TOLLGATE_ENGINES_FILE: path.join(dir, 'engines.json'),
    TOLLGATE_SEED_DEMO: 'true',
    TOLLGATE_PASSWORD_COST: '10',
  });
  const stop = async () => {
    await gateway.child.stop('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await until('the first start has printed the demo key', () => /sk-gw-\S+/.test(gateway.child.output()), {
      detail: () => gateway.child.output(),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, gateway, key: /sk-gw-\S+/.exec(gateway.child.output())![0], stop };
}
