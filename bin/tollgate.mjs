#!/usr/bin/env node
// The `tollgate` command: the built CLI in dist/ (`npm ci` builds it; `npm run build` after a change).
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('tollgate: the CLI is not built: run `npm run build` in the Tollgate folder first.\n');
  process.exit(2);
}
const { main } = await import(built.href);
process.exitCode = await main(process.argv.slice(2));
