#!/usr/bin/env node
// The slowest test files of a run, from test-results/file-times.json (written by
// test/helpers/file-times-reporter.ts at the end of every vitest run):
// `node scripts/slowest-tests.mjs [file] [count]`. Prints the run's time, how many files went
// over 90 s, and the `count` slowest (10 unless given), each with its time and state.
import { readFileSync } from 'node:fs';

const [file = 'test-results/file-times.json', count = '10'] = process.argv.slice(2);
const run = JSON.parse(readFileSync(file, 'utf8'));
const files = [...run.files].sort((a, b) => b.seconds - a.seconds);
const over = files.filter((entry) => entry.seconds > 90).length;
console.log(`${files.length} files in ${run.seconds.toFixed(0)} s; ${over} over 90 s`);
for (const { file: name, seconds, state } of files.slice(0, Number(count)))
  console.log(`${seconds.toFixed(1).padStart(7)} s  ${state.padEnd(7)} ${name}`);
