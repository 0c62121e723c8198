import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, repoRoot, startGatewayProcess } from '../../helpers/processes.js';
import { requireServices } from '../../helpers/services.js';

/**
 * The operating guide's commands run as written: every `sh` block marked
 * `<!-- operating-script -->` in docs/operating.md, in order, as one script
 * (a later block uses an earlier one's variables), in bash with `-e` and
 * `pipefail` (a command that exits non-zero stops it), against a fresh
 * gateway process on the embedded default, as an operator reading the guide
 * would run them. No `npx tollgate` command of the guide is outside them.
 */

const OPERATOR = 'operating-docs-operator-token-0123';

// The guide packs a stack with zip, as an operator would.
const hasZip = (process.env.PATH ?? '')
  .split(path.delimiter)
  .some((folder) => folder !== '' && existsSync(path.join(folder, 'zip')));
if (!hasZip && requireServices)
  throw new Error(
    'REQUIRE_SERVICES=1 but there is no zip on PATH: the operating guide packs a stack with it (apt-get install zip)',
  );
if (!hasZip)
  console.warn(
    'skipping the operating guide: it packs a stack with zip, and there is no zip on PATH (apt-get install zip)',
  );

describe.skipIf(!hasZip)('docs/operating.md', () => {
  let gateway: GatewayProcess;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-operating-'));
    gateway = await startGatewayProcess('operating-docs', {
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_ADMIN_TOKEN: OPERATOR,
      TOLLGATE_PASSWORD_COST: '10',
    });
  });
  afterAll(async () => {
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  });

  it('every command of its script exits 0, in order, against a fresh gateway', async () => {
    const guide = await readFile(path.join(repoRoot, 'docs/operating.md'), 'utf8');
    const markers = guide.match(/<!-- operating-script[^>]*-->/g) ?? [];
    const blocks = [...guide.matchAll(/<!-- operating-script[^>]*-->\n```sh\n([\s\S]*?)```/g)].map(
      (match) => match[1]!,
    );
    expect(blocks.length, 'docs/operating.md: a marker not followed by an sh block').toBe(markers.length);
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    const script = blocks.join('\n');
    const commands = script.split('\n').filter((line) => line.includes('npx tollgate'));
    // Every command the guide shows is in a marked block: what else names one is prose or the
    // options table.
    expect(guide.split('\n').filter((line) => line.includes('npx tollgate'))).toHaveLength(commands.length);
    expect(commands.length).toBeGreaterThan(30);
    expect(script, 'a placeholder in a runnable block').not.toMatch(/…|\[--/);
    // -x prints each command as it runs: a failure's output names the one that failed. `npx
    // tollgate` runs this package's bin/tollgate.mjs; called straight, each command saves npx's
    // second of start-up.
    const npx =
      'npx() { if [ "$1" = tollgate ]; then shift; node bin/tollgate.mjs "$@"; else command npx "$@"; fi; }\n';
    const run = spawnSync('bash', ['-euxo', 'pipefail', '-c', npx + script], {
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
