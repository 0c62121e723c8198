import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files known to take longest (a minute or more on CI's 2-core machine: real processes,
 * SIGKILLs, Docker, Chromium, llama.cpp, tools that wait out a timeout), longest first. Refresh it
 * from a whole run's times: `node scripts/slowest-tests.mjs test-results/file-times.json 20`.
 */
export const HEAVY_FILES = [
  'test/platform/runs/untrusted-output-bubblewrap.test.ts',
  'test/platform/runs/untrusted-output-docker.test.ts',
  'test/platform/runs/untrusted-output-none.test.ts',
  'test/gateway/billing/month-of-books.test.ts',
  'test/platform/runs/hostile.test.ts',
  'test/gateway/flow/flood.test.ts',
  'test/surfaces/cli/operating-docs.test.ts',
  'test/platform/runs/workers.test.ts',
  'test/gateway/background-responses.test.ts',
  'test/surfaces/cli/install.test.ts',
  'test/chaos/chaos.test.ts',
  'test/shared/http/logs.test.ts',
  'test/surfaces/v1/batches-bounds.test.ts',
  'test/platform/runs/runs.test.ts',
  'test/platform/runs/runs-bounds.test.ts',
  'test/platform/runs/runs-unavailable.test.ts',
  'test/platform/runs/runs-cancel-and-log.test.ts',
  'test/platform/runs/runs-web.test.ts',
  'test/surfaces/v1/cache.test.ts',
  'test/coding-agent/mcp.test.ts',
  'test/gateway/engines/llama-server.test.ts',
];

/**
 * vitest's order (on a machine with its cache: failed first, then longest first; without one, as
 * on CI's fresh clone: largest file first), with HEAVY_FILES put first in their order. The heavy
 * files then run beside the many short ones rather than after them, where one of them alone
 * would leave the other worker idle for a minute or more at the end of the run.
 */
export default class HeavyFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = HEAVY_FILES.indexOf(path.relative(this.ctx.config.root, file.moduleId).split(path.sep).join('/'));
      return index === -1 ? HEAVY_FILES.length : index;
    };
    return sorted
      .map((file, order) => ({ file, order, rank: rank(file) }))
      .sort((a, b) => a.rank - b.rank || a.order - b.order)
      .map(({ file }) => file);
  }
}
