import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Builds `dist/` once before the suites run, so tests that start the CLI or
 * a gateway process run what `npm start` runs (the built JavaScript), never a
 * stale build.
 */
export default function setup(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: path.resolve(import.meta.dirname, '..'), stdio: 'inherit' });
}
