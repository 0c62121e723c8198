import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../shared/http/log.js';
import type { StackCatalog } from './service.js';
import { readStackPackage } from './package.js';
import { lazily } from '../../shared/lazy-require.js';

const yazl = lazily<typeof import('yazl')>('yazl');

/**
 * The global stacks shipped with Tollgate: each folder of `stacks/` at the
 * package root (found from `src/platform/stacks/` under tsx or from the bundle in
 * `dist/`), zipped in memory and read as any upload is. Each is added at
 * start-up when the catalog has no stack of its name: the first start loads
 * them, an operator's edits are kept, and a deleted one comes back at the
 * next start unless its folder is removed.
 *
 * @example
 * await loadShippedStacks(catalog, log);
 */
export async function loadShippedStacks(
  catalog: StackCatalog,
  log: Logger,
  folder = shippedFolder(),
): Promise<string[]> {
  if (!folder) return [];
  const added: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    // Zipping and reading a stack is most of a start's time: skipped when its manifest names one
    // the catalog has (every start but the first).
    const named = await manifestName(path.join(folder, entry.name));
    if (named !== null && (await catalog.hasStackNamed(named))) continue;
    const zip = await zipFolder(path.join(folder, entry.name));
    const read = await readStackPackage(zip, { fileName: `${entry.name}.zip` });
    if (await catalog.addShipped(read, zip)) added.push(read.manifest.name);
  }
  if (added.length > 0) log.info('shipped stacks added to the catalog', { stacks: added });
  return added;
}

/**
 * The `name` of a folder's `manifest.json`, or null when it has none (then the package is read
 * whole).
 */
async function manifestName(folder: string): Promise<string | null> {
  const text = await readFile(path.join(folder, 'manifest.json'), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const name = (JSON.parse(text) as { name?: unknown }).name;
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}

function shippedFolder(): string | null {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'stacks', 'monitoring', 'manifest.json'))) return path.join(dir, 'stacks');
    if (dir === path.dirname(dir)) return null;
  }
}

/** A folder as a .zip in memory, files in name order (the same folder makes the same bytes). */
async function zipFolder(folder: string): Promise<Buffer> {
  const zip = new (yazl().ZipFile)();
  const files = (await readdir(folder, { recursive: true, withFileTypes: true })).filter((f) => f.isFile());
  const names = files
    .map((f) => path.relative(folder, path.join(f.parentPath, f.name)).split(path.sep).join('/'))
    .sort();
  for (const name of names) zip.addBuffer(await readFile(path.join(folder, name)), name, { mtime: new Date(0) });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}
