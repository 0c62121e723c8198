import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../helpers/processes.js';

/**
 * The install path of docs/coding-agent.md, as a user runs it: `npm pack`,
 * then `npm install -g` of the tarball into a fresh prefix, then the
 * installed `tollgate` command. dist/ is already built by the suites' global
 * setup, so the pack skips the build (`--ignore-scripts`); the install reads
 * dependencies from npm's cache (`--offline`, what `npm ci` left there) and
 * asks the registry only when the cache lacks one.
 */

const run = promisify(execFile);
const INSTALL_TIMEOUT_MS = 180_000;

// npx sets npm_config_* (prefix, global, cache folder of this run): the install must see none of
// them.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));

describe('npm pack then npm install -g of the tarball', () => {
  let work: string;
  let tarball: string;
  let packed: string[];
  let prefix: string;

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'tollgate-install-'));
    prefix = path.join(work, 'prefix');
    const pack = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: repoRoot,
      env,
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [made] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
    tarball = path.join(work, made!.filename);
    packed = made!.files.map((file) => file.path);
    const install = (network: string) =>
      run('npm', ['install', '-g', '--prefix', prefix, network, '--no-audit', '--no-fund', tarball], {
        cwd: work,
        env,
        timeout: INSTALL_TIMEOUT_MS / 2,
      });
    // A dependency missing from the cache fails --offline with ENOTCACHED: then the registry, once.
    await install('--offline').catch(() => install('--prefer-offline'));
  }, INSTALL_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('packs what the command needs to run and none of the sources or tests', () => {
    for (const needed of [
      'bin/tollgate.mjs',
      'dist/cli/main.js',
      'dist/main.js',
      'drizzle/0000_init.sql',
      'engines/engines.json',
      'docs/coding-agent.md',
    ])
      expect(packed).toContain(needed);
    expect(packed.some((file) => file.startsWith('stacks/monitoring/'))).toBe(true);
    const leaked = packed.filter((file) => /^(test|src|bench|\.ci|node_modules)\//.test(file));
    expect(leaked).toEqual([]);
  });

  it('installs a tollgate command whose `code --help` and `--help` answer', async () => {
    const bin = path.join(prefix, 'bin', 'tollgate');
    const code = await run(bin, ['code', '--help'], { cwd: work, env, timeout: 30_000 });
    expect(code.stdout).toMatch(/^usage: tollgate code /);
    expect(code.stdout).toContain('docs/coding-agent.md');
    const top = await run(bin, ['--help'], { cwd: work, env, timeout: 30_000 });
    expect(top.stdout).toContain('tollgate orgs create');
    expect(top.stdout).toContain('tollgate code');
  });
});
