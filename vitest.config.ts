import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // A file with no test left where a service is missing ends with a named skip (see the runner).
    runner: 'test/helpers/suite-keeping-runner.ts',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own gateway and database; two at a time suits a 2-core machine.
    maxWorkers: 2,
  },
});
