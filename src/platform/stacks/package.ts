import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GatewayError } from '../../shared/http/errors.js';
import { toDetails } from '../../shared/http/validate.js';
import { STACK_NAME, type StackInput, type StackManifest, stackManifest } from './manifest.js';
import { DEFAULT_PACKAGE_LIMITS, type PackageLimits, readableReason, readEntries, refusal } from './zip-entries.js';

export { DEFAULT_PACKAGE_LIMITS, type PackageLimits } from './zip-entries.js';

/** What a package holds, once read and checked. */
export interface StackPackage {
  /** From its manifest, or derived from the module (see `readStackPackage`). */
  manifest: StackManifest;
  /** Whether the manifest came from a `manifest.json` (false: derived). */
  fromManifest: boolean;
  /** The module's folder inside the zip ('' for the top), where its `.tf` files are. */
  root: string;
}

/**
 * The HCL parser (HashiCorp's own, compiled to WebAssembly), loaded when a
 * package without a manifest is read. Imported by a name TypeScript does not
 * follow: its type declarations pull the browser's DOM types into the whole
 * project, which would change Node's own `Headers` and `ReadableStream`.
 */
const HCL_PARSER = '@cdktn/hcl2json';
export async function parseHcl(fileName: string, text: string): Promise<unknown> {
  const { parse } = (await import(HCL_PARSER)) as { parse: (fileName: string, text: string) => Promise<unknown> };
  return parse(fileName, text);
}

/**
 * Variables named so are injected by the platform on every run (`tollgate_cluster_id`, ...), not
 * inputs.
 */
const PLATFORM_VARIABLE_PREFIX = 'tollgate_';

/**
 * Reads a stack package (a .zip of an OpenTofu/Terraform module) from memory
 * with yauzl, entry by entry, without writing anything to disk, and refuses
 * it, with a 400 that names the entry and the rule, when it breaks one: too
 * large (zip or uncompressed total), too many entries, an entry compressed
 * more than `maxRatio` times (a zip bomb), an absolute path or `..`, a
 * symlink, an encrypted entry, an unreadable zip, no `.tf` file.
 *
 * The manifest is the shallowest `manifest.json` (two at that depth: 400
 * naming both), checked by the same rules as the API; without a `name` (the
 * spec's manifest has none) it is named as below. Without one it is
 * derived: name and title from the zip's file name or its one top folder,
 * description from the README's first paragraph, category Custom, inputs
 * from the `variable` blocks of the root's `.tf` files (parsed with a real
 * HCL parser): `number` stays number, any other type is a string, required
 * when there is no `default` (`default = null` is optional, as in Terraform).
 *
 * @example
 * const { manifest } = await readStackPackage(zipBytes, { fileName: 'monitoring.zip' });
 */
export async function readStackPackage(
  zip: Buffer,
  options: { fileName?: string; limits?: PackageLimits } = {},
): Promise<StackPackage> {
  const limits = options.limits ?? DEFAULT_PACKAGE_LIMITS;
  if (zip.length > limits.maxZipBytes)
    throw refusal('package', `The .zip is ${zip.length} bytes; at most ${limits.maxZipBytes} are taken.`);
  const files = await readEntries(
    zip,
    limits,
    (name) =>
      name.endsWith('.tf') || basename(name) === 'manifest.json' || /^readme(\.md|\.txt)?$/i.test(basename(name)),
  );
  const paths = [...files.keys()];
  if (!paths.some((path) => path.endsWith('.tf')))
    throw refusal('package', 'It holds no .tf file: a stack is an OpenTofu or Terraform module.');

  const manifests = paths.filter((path) => basename(path) === 'manifest.json').sort((a, b) => depth(a) - depth(b));
  if (manifests.length > 1 && depth(manifests[0]!) === depth(manifests[1]!)) {
    const same = manifests.filter((path) => depth(path) === depth(manifests[0]!));
    throw refusal(same[0]!, `Two manifests at the same depth (${same.join(', ')}): keep one.`);
  }
  if (manifests[0]) {
    const path = manifests[0];
    let json: unknown;
    try {
      json = JSON.parse(files.get(path)!.toString('utf8'));
    } catch {
      throw refusal(path, 'It is not valid JSON.');
    }
    const parsed = stackManifest.safeParse(json);
    if (!parsed.success)
      throw new GatewayError('invalid_request', `${path} breaks the manifest's rules.`, {
        details: toDetails(parsed.error.issues).map((d) => ({ field: `${path}: ${d.field}`, message: d.message })),
      });
    // The spec's manifest has no name: one without it is named as a package without a manifest.
    const name = parsed.data.name ?? derivedName(paths, options.fileName);
    if (!name) throw refusal(path, 'No name could be made from the file or folder name: give the manifest a name.');
    return { manifest: { ...parsed.data, name }, fromManifest: true, root: dirname(path) };
  }

  const root = commonTopFolder(paths);
  const name = derivedName(paths, options.fileName);
  if (!name)
    throw refusal('package', 'No name could be made from the file or folder name: add a manifest.json with a name.');
  const readme = paths.find((path) => dirname(path) === root && /^readme(\.md|\.txt)?$/i.test(basename(path)));
  const manifest: StackManifest = {
    ...stackManifest.parse({
      title: titleOf(name),
      description: readme ? firstParagraph(files.get(readme)!.toString('utf8')) : '',
      category: 'Custom',
      inputs: await inputsOf(
        files,
        paths.filter((path) => dirname(path) === root && path.endsWith('.tf')),
      ),
    }),
    name,
  };
  return { manifest, fromManifest: false, root };
}

/**
 * Unpacks a stored package's module (the files under `root`) into `folder`,
 * read and checked as on upload, for a run. Paths are relative to the root.
 *
 * @example
 * await extractStackPackage(zip, row.root, '/tmp/tollgate-runs/run_1');
 */
export async function extractStackPackage(
  zip: Buffer,
  root: string,
  folder: string,
  limits: PackageLimits = DEFAULT_PACKAGE_LIMITS,
): Promise<string[]> {
  const files = await readEntries(zip, limits, (name) => name.startsWith(root));
  const target = path.resolve(folder);
  const written: string[] = [];
  for (const [name, content] of files) {
    const relative = name.slice(root.length);
    const file = path.resolve(target, relative);
    // yauzl already refuses absolute paths and `..`; a second check costs nothing.
    if (!file.startsWith(target + path.sep)) throw refusal(name, 'It points outside the module.');
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content, { mode: 0o644 });
    written.push(relative);
  }
  return written;
}

/**
 * Inputs from `variable` blocks: name, type (number, else string), default, description; required
 * without a `default` (`default = null` is optional).
 */
async function inputsOf(files: Map<string, Buffer>, tfPaths: string[]): Promise<StackInput[]> {
  const inputs: StackInput[] = [];
  for (const path of tfPaths.sort()) {
    let parsed: { variable?: Record<string, Array<Record<string, unknown>>> };
    try {
      parsed = (await parseHcl(path, files.get(path)!.toString('utf8'))) as typeof parsed;
    } catch (error) {
      throw refusal(path, `It is not valid HCL (${readableReason(error)}).`);
    }
    for (const [name, [block = {}] = []] of Object.entries(parsed.variable ?? {})) {
      // The platform's own variables (see src/platform/runs/workspace.ts) are set on every run,
      // never asked for.
      if (name.startsWith(PLATFORM_VARIABLE_PREFIX)) continue;
      const type =
        typeof block.type === 'string' && block.type.replace(/^\$\{|\}$/g, '') === 'number' ? 'number' : 'string';
      const raw = block.default;
      const defaultValue =
        raw === undefined || raw === null
          ? undefined
          : type === 'number' && typeof raw === 'number'
            ? raw
            : typeof raw === 'string'
              ? raw
              : JSON.stringify(raw);
      inputs.push({
        name,
        type: type === 'number' && defaultValue !== undefined && typeof defaultValue !== 'number' ? 'string' : type,
        // `default = null` makes a variable optional in Terraform (its value is null): listed
        // without a default.
        required: !('default' in block),
        ...(defaultValue === undefined ? {} : { default: defaultValue }),
        ...(typeof block.description === 'string' ? { description: block.description } : {}),
      });
    }
  }
  return inputs;
}

const basename = (path: string) => path.slice(path.lastIndexOf('/') + 1);
const dirname = (path: string) => path.slice(0, path.lastIndexOf('/') + 1);
const depth = (path: string) => path.split('/').length - 1;

/**
 * A name from the zip's one top folder, or else the uploaded file's name; null when neither makes a
 * valid one.
 */
function derivedName(paths: string[], fileName = 'stack'): string | null {
  const root = commonTopFolder(paths);
  const name = slug(root ? root.slice(0, -1) : fileName.replace(/\.zip$/i, ''));
  return STACK_NAME.test(name) ? name : null;
}

/**
 * The one folder every file is in (`stack/`), or '' when the files sit at the top or in several
 * folders.
 */
function commonTopFolder(paths: string[]): string {
  const tops = new Set(paths.map((path) => (path.includes('/') ? path.slice(0, path.indexOf('/') + 1) : '')));
  return tops.size === 1 ? [...tops][0]! : '';
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63);
}

function titleOf(name: string): string {
  return name
    .split('-')
    .filter(Boolean)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join(' ');
}

/** The README's first paragraph of prose: headings, badges and blank lines before it skipped. */
function firstParagraph(readme: string): string {
  const paragraphs = readme.replace(/\r\n?/g, '\n').split(/\n\s*\n/);
  const prose = paragraphs
    .map((p) => p.trim())
    .find((p) => p && !p.startsWith('#') && !p.startsWith('![') && !p.startsWith('[!['));
  return (prose ?? '').replace(/\s*\n\s*/g, ' ').slice(0, 5000);
}
