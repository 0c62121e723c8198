#!/usr/bin/env node
// Whether dist/ is the build of what is checked out now, so `npm start` (and the test run's global
// setup) can skip esbuild and the PGlite template step when nothing they read has changed: about
// 2.5 s of every start otherwise. `npm run build` itself always builds, and records the stamp:
//
//   node scripts/build-stamp.mjs begin   (prebuild) hashes the inputs into dist/.build-stamp.pending
//   node scripts/build-stamp.mjs end     (after the build succeeded) makes that the stamp
//   node scripts/build-stamp.mjs check   exits 0 when the stamp equals the inputs' hash, 1 otherwise
//
// The hash is taken before the build, so a file saved while esbuild runs makes the next check fail
// rather than be missed. Content, not modification times: a checkout that rewrites files unchanged
// needs no build, and one that restores an older file with a newer time still gets one.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
const stamp = path.join(dist, '.build-stamp');
const pending = `${stamp}.pending`;

/**
 * What the build reads: the sources and migrations (bundled, and made into the PGlite template),
 * the lock file (esbuild's and the bundled packages' versions), package.json (the build command)
 * and this script.
 */
const inputs = ['src', 'drizzle', 'package.json', 'package-lock.json', 'scripts/build-stamp.mjs'];

async function filesUnder(relative) {
  const absolute = path.join(root, relative);
  const entries = await readdir(absolute, { withFileTypes: true }).catch((error) => {
    if (error.code === 'ENOTDIR') return null;
    throw error;
  });
  if (entries === null) return [relative];
  const nested = await Promise.all(
    entries
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((entry) =>
        entry.isDirectory() ? filesUnder(path.join(relative, entry.name)) : [path.join(relative, entry.name)],
      ),
  );
  return nested.flat();
}

async function inputsHash() {
  const hash = createHash('sha256');
  for (const file of (await Promise.all(inputs.map(filesUnder))).flat()) {
    hash.update(`${file}\0`);
    hash.update(await readFile(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The built files a start needs; a stamp without them (dist/ partly removed) is not trusted. */
function builtFilesPresent() {
  const template = path.join(dist, 'pglite-template');
  const templates = existsSync(template) ? readdirSync(template) : [];
  const templateMade = templates.some((name) => existsSync(path.join(template, name, 'PG_VERSION')));
  return existsSync(path.join(dist, 'main.js')) && templateMade;
}

const command = process.argv[2];
if (command === 'begin') {
  await mkdir(dist, { recursive: true });
  await rm(stamp, { force: true });
  await writeFile(pending, await inputsHash());
} else if (command === 'end') {
  // Another build in the same folder at once (two test runs) may have recorded it already.
  const hash = await readFile(pending, 'utf8').catch(() => null);
  if (hash !== null) {
    await writeFile(`${stamp}.${process.pid}`, hash);
    await rename(`${stamp}.${process.pid}`, stamp);
    await rm(pending, { force: true });
  }
} else if (command === 'check') {
  const recorded = await readFile(stamp, 'utf8').catch(() => null);
  process.exitCode = recorded !== null && builtFilesPresent() && recorded === (await inputsHash()) ? 0 : 1;
} else {
  process.stderr.write('usage: node scripts/build-stamp.mjs begin|end|check\n');
  process.exitCode = 2;
}
