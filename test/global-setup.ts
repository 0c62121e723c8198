import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createTemplateDatabase } from './helpers/postgres-template.js';
import { dropOrphanedTestDatabases, postgresAvailable } from './helpers/services.js';

const root = path.resolve(import.meta.dirname, '..');

/**
 * Builds `dist/` before the suites run unless it is already the build of
 * this checkout (`scripts/build-stamp.mjs`, as `npm start` does), so tests
 * that start the CLI or a gateway process run what `npm start` runs (the
 * built JavaScript), never a stale build; and makes the run's migrated
 * PostgreSQL template, which every test database is then a copy of.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!builtAlready()) execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  const template = await makeTemplate();
  project.provide('postgresTemplate', template?.name ?? null);
  return async () => {
    await template?.drop();
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
 * The template, or none when PostgreSQL does not answer (its tests skip, or
 * fail on their own under REQUIRE_SERVICES=1) or the migrations fail on it
 * (each test database then runs them, and each test says how they failed).
 */
async function makeTemplate(): Promise<Awaited<ReturnType<typeof createTemplateDatabase>> | null> {
  if (!(await postgresAvailable().catch(() => false))) return null;
  try {
    return await createTemplateDatabase();
  } catch (error) {
    console.warn(`no PostgreSQL template database: test databases run the migrations themselves (${String(error)})`);
    return null;
  }
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
