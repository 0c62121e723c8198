#!/usr/bin/env node
// Statement coverage of some folders of src/, summed from vitest's json-summary report
// (coverage/coverage-summary.json unless given): `node scripts/coverage-folders.mjs
// [report] [folder…]`, folders src/gateway and src/platform unless given.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [report = 'coverage/coverage-summary.json', ...named] = process.argv.slice(2);
const folders = named.length > 0 ? named : ['src/gateway', 'src/platform', 'src'];
const summary = JSON.parse(readFileSync(report, 'utf8'));
const root = process.cwd();

for (const folder of folders) {
  let covered = 0;
  let total = 0;
  for (const [file, figures] of Object.entries(summary)) {
    if (file === 'total') continue;
    const relative = path.relative(root, path.resolve(root, file)).split(path.sep).join('/');
    if (!relative.startsWith(`${folder}/`)) continue;
    covered += figures.statements.covered;
    total += figures.statements.total;
  }
  const percent = total === 0 ? 'n/a' : `${((covered / total) * 100).toFixed(2)}%`;
  console.log(`statements in ${folder}: ${percent} (${covered} of ${total})`);
}
