import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

/**
 * Writes each test file's time, as the default reporter shows it (setting up, importing, and its
 * tests with their hooks, where a file's gateway starts), and the run's, to
 * test-results/file-times.json; `node scripts/slowest-tests.mjs` prints the slowest. The JSON
 * reporter's times leave the hooks and the import out, so a file that waits a minute for its
 * gateway looks quick there.
 */
export default class FileTimesReporter implements Reporter {
  private root = process.cwd();
  private started = Date.now();

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
    this.started = Date.now();
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files = testModules.map((module) => {
      const times = module.diagnostic();
      const ms = times.environmentSetupDuration + times.prepareDuration + times.collectDuration + times.setupDuration;
      return {
        file: path.relative(this.root, module.moduleId).split(path.sep).join('/'),
        seconds: Math.round(ms + times.duration) / 1000,
        state: module.state(),
      };
    });
    const folder = path.join(this.root, 'test-results');
    mkdirSync(folder, { recursive: true });
    const run = { seconds: Math.round(Date.now() - this.started) / 1000, files };
    writeFileSync(path.join(folder, 'file-times.json'), `${JSON.stringify(run, null, 2)}\n`);
  }
}
