import { defineConfig } from 'vitest/config';
import FileTimesReporter from './test/helpers/file-times-reporter.js';
import HeavyFirstSequencer from './test/helpers/heavy-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // A file with no test left where a service is missing ends with a named skip (see the runner).
    runner: 'test/helpers/suite-keeping-runner.ts',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own gateway and database; two at a time suits a 2-core machine
    // (`--maxWorkers=3` on the command line tries three).
    maxWorkers: 2,
    // Each file's time, hooks included, in test-results/file-times.json
    // (scripts/slowest-tests.mjs).
    reporters: ['default', new FileTimesReporter()],
    // The files known to be long start first, beside the short ones (see the sequencer).
    sequence: { sequencer: HeavyFirstSequencer },
    // With --coverage (as CI runs it): v8's statement coverage of src/, summed in coverage/
    // (ignored by git); `node scripts/coverage-folders.mjs` prints src/gateway's and
    // src/platform's.
    coverage: {
      provider: 'v8',
      include: ['src/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
    },
  },
});
