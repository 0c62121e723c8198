import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yazl from 'yazl';
import type { Logger } from '../../shared/http/log.js';
import type { StackCatalog } from './service.js';
import { readStackPackage } from './package.js';

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
    const zip = await zipFolder(path.join(folder, entry.name));
    const read = await readStackPackage(zip, { fileName: `${entry.name}.zip` });
    if (await catalog.addShipped(read, zip)) added.push(read.manifest.name);
  }
  if (added.length > 0) log.info('shipped stacks added to the catalog', { stacks: added });
  return added;
}

function shippedFolder(): string | null {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'stacks', 'monitoring', 'manifest.json'))) return path.join(dir, 'stacks');
    if (dir === path.dirname(dir)) return null;
  }
}

/** A folder as a .zip in memory, files in name order (the same folder makes the same bytes). */
async function zipFolder(folder: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
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
