import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { templateName } from './helpers/postgres-template.js';
import { dropDatabase, dropOrphanedTestDatabases, postgresAvailable } from './helpers/services.js';

const root = path.resolve(import.meta.dirname, '..');

/**
 * Builds `dist/` before the suites run unless it is already the build of
 * this checkout (`scripts/build-stamp.mjs`, as `npm start` does), so tests
 * that start the CLI or a gateway process run what `npm start` runs (the
 * built JavaScript), never a stale build; and names the run's migrated
 * PostgreSQL template, which every test database is then a copy of, and
 * drops it at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!builtAlready()) execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  const template = await templateForWorkers();
  project.provide('postgresTemplate', template);
  return async () => {
    if (template !== null) await dropDatabase(template);
    await teardown();
  };
}

function builtAlready(): boolean {
  try {
    execFileSync(process.execPath, ['scripts/build-stamp.mjs', 'check'], { cwd: root, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The name the run's PostgreSQL template goes by (the first worker that needs it makes it:
 * `postgres-template.ts`), or null when PostgreSQL does not answer (its tests skip, or fail on
 * their own under REQUIRE_SERVICES=1). One left by an earlier run under the same pid (a container's
 * pids repeat) is dropped first: it may be of other migrations.
 */
async function templateForWorkers(): Promise<string | null> {
  if (!(await postgresAvailable().catch(() => false))) return null;
  const name = templateName(process.pid);
  await dropDatabase(name);
  return name;
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
