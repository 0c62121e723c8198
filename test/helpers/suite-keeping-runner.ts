import path from 'node:path';
import { it, TestRunner } from 'vitest';

/**
 * vitest's runner, with one rule added: a test file that registered no test
 * at all (every suite of it a `describe.each` over services that are not
 * here) ends with a skipped test saying so, not with vitest's "No test
 * suite found in file", which fails the run. So a newcomer's `npm test` on a
 * machine without bubblewrap, Docker or Chromium passes with named skips
 * whatever a file forgets; the file's own warning (printed above its
 * results) says which service is missing. Under REQUIRE_SERVICES=1, as CI
 * runs, nothing is added: such a file still fails there, since every
 * service is meant to be present. Files should still say why themselves
 * (`skippedWithout` of skips.ts): this is the net under them.
 *
 * Why a runner and not a lint rule over test/: whether a `describe.each`'s
 * list can be empty is known only when the file runs (`sandboxKinds()`,
 * `tool ? kinds : []`, `availableStores()` which is never empty), so a
 * static rule either flags every `describe.each` or misses the next helper;
 * the runner sees what was actually registered, in every file, now and later.
 */
export default class SuiteKeepingRunner extends TestRunner {
  override async importFile(filepath: string, source: 'collect' | 'setup'): Promise<unknown> {
    const imported = await super.importFile(filepath, source);
    if (
      source === 'collect' &&
      process.env.REQUIRE_SERVICES !== '1' &&
      TestRunner.getCurrentSuite().tasks.length === 0
    ) {
      const file = path.relative(process.cwd(), filepath);
      it.skip(`skipped: ${file} has no test that can run here (its warning above names the missing service)`, () => {});
    }
    return imported;
  }
}
