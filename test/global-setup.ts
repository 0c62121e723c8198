import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { dropOrphanedTestDatabases, postgresAvailable } from './helpers/services.js';

/**
 * Builds `dist/` once before the suites run, so tests that start the CLI or
 * a gateway process run what `npm start` runs (the built JavaScript), never a
 * stale build.
 */
export default function setup(): () => Promise<void> {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: path.resolve(import.meta.dirname, '..'), stdio: 'inherit' });
  return teardown;
}

/**
 * Once every file is done: a test database whose file did not drop it is
 * dropped here, and named, so the run leaves nothing behind and says which
 * file to fix (its name carries the file's).
 */
async function teardown(): Promise<void> {
  if (!(await postgresAvailable().catch(() => false))) return;
  const dropped = await dropOrphanedTestDatabases();
  if (dropped.length > 0) console.warn(`test databases their files left behind, dropped now: ${dropped.join(', ')}`);
}
