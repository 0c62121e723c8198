import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, repoRoot, startGatewayProcess } from '../../helpers/processes.js';

/**
 * The operating guide's commands run as written: the `sh` block after the
 * `operating-script` marker in docs/operating.md, top to bottom, in bash with
 * `-e` and `pipefail` (a command that exits non-zero stops it), against a
 * fresh gateway process on the embedded default, as an operator reading the
 * guide would run them.
 */

const OPERATOR = 'operating-docs-operator-token-0123';

describe('docs/operating.md', () => {
  let gateway: GatewayProcess;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-operating-'));
    gateway = await startGatewayProcess('operating-docs', { TOLLGATE_DATA_DIR: dataDir, TOLLGATE_ADMIN_TOKEN: OPERATOR, TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('every command of its script exits 0, in order, against a fresh gateway', async () => {
    const guide = await readFile(path.join(repoRoot, 'docs/operating.md'), 'utf8');
    const script = /<!-- operating-script[^>]*-->\n```sh\n([\s\S]*?)```/.exec(guide)?.[1];
    expect(script, 'docs/operating.md has no operating-script block').toBeDefined();
    const commands = script!.split('\n').filter((line) => line.includes('npx tollgate'));
    expect(commands.length).toBeGreaterThan(20);
    // -x prints each command as it runs: a failure's output names the one that failed.
    // `npx tollgate` runs this package's bin/tollgate.mjs; called straight, each command saves npx's second of start-up.
    const npx = 'npx() { if [ "$1" = tollgate ]; then shift; node bin/tollgate.mjs "$@"; else command npx "$@"; fi; }\n';
    const run = spawnSync('bash', ['-euxo', 'pipefail', '-c', npx + script!], {
      cwd: repoRoot,
      env: { ...process.env, TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_TOKEN: OPERATOR, npm_config_yes: 'true' },
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(run.status, `${run.stderr.slice(-3000)}`).toBe(0);
    // Each command ran: bash -x traced every one.
    expect(run.stderr.split('\n').filter((line) => /^\++ npx tollgate /.test(line))).toHaveLength(commands.length);
  }, 300_000);
});
