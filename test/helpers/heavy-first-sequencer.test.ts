import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import HeavyFirstSequencer, { HEAVY_FILES } from './heavy-first-sequencer.js';

const root = path.resolve(import.meta.dirname, '..', '..');

it('names only test files that exist (a renamed or split file is renamed here too)', () => {
  expect(HEAVY_FILES.filter((file) => !existsSync(path.join(root, file)))).toEqual([]);
});

it("starts the listed files first, in the list's order, and keeps vitest's order for the rest", async () => {
  // vitest's order with no cache (a fresh clone): the order given, as nothing is known of the
  // files.
  const project = { name: '', config: { sequence: { groupOrder: 0 }, isolate: true } };
  const cache = { getFileTestResults: () => undefined, getFileStats: () => undefined };
  const sequencer = new HeavyFirstSequencer({ config: { root }, cache } as never);
  const given = ['test/a.test.ts', HEAVY_FILES[2]!, 'test/b.test.ts', HEAVY_FILES[0]!];
  const sorted = await sequencer.sort(given.map((file) => ({ moduleId: path.join(root, file), project })) as never);
  expect(sorted.map((spec) => path.relative(root, spec.moduleId))).toEqual([
    HEAVY_FILES[0],
    HEAVY_FILES[2],
    'test/a.test.ts',
    'test/b.test.ts',
  ]);
});
