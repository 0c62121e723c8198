#!/usr/bin/env node
// The slowest test files of a run, from vitest's JSON report (`--reporter=json
// --outputFile.json=FILE`): `node scripts/slowest-tests.mjs FILE [count]`. Prints the run's
// span (first file's start to last file's end) and each file's own time, longest first.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [file, count = '10'] = process.argv.slice(2);
if (!file) {
  console.error('usage: node scripts/slowest-tests.mjs REPORT.json [count]');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const files = report.testResults.map((result) => ({
  name: path.relative(process.cwd(), result.name),
  seconds: (result.endTime - result.startTime) / 1000,
  status: result.status,
}));
files.sort((a, b) => b.seconds - a.seconds);
const first = Math.min(...report.testResults.map((result) => result.startTime));
const last = Math.max(...report.testResults.map((result) => result.endTime));
console.log(
  `${files.length} files, ${report.numTotalTests} tests (${report.numPassedTests} passed, ${report.numFailedTests} failed, ` +
    `${report.numPendingTests} skipped); first start to last end ${((last - first) / 1000).toFixed(0)} s`,
);
for (const { name, seconds, status } of files.slice(0, Number(count)))
  console.log(`${seconds.toFixed(1).padStart(7)} s  ${status.padEnd(7)} ${name}`);
