import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { stackView } from '../../api/stacks.js';
import { STACK_CATEGORIES } from '../../../platform/stacks/manifest.js';
import type { Args } from '../args.js';
import { segment } from '../client.js';
import { CliError, UsageError } from '../errors.js';
import { date, fields, table } from '../output.js';
import { type Command, STRING } from './command.js';

// `stacks list|get|add|download|delete`: the template catalog as a user
// sees it, with an API key (`--api-key` or $TOLLGATE_API_KEY), so stacks
// need neither curl nor the portal. What a user adds is private; what a
// platform admin adds is global.
//
// @example
// tollgate stacks add ./slurm.zip
// tollgate stacks add https://example.com/k3s.zip
// tollgate stacks get slurm --json
// tollgate stacks download slurm -o slurm.zip

type StackView = ReturnType<typeof stackView>;
/** GET /v1/stacks: a page of the catalog. */
interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; pages: number };
}
/** What `stacks download` did, and what its `--json` prints. */
interface Saved {
  name: string;
  file: string;
  size_bytes: number;
  sha256: string;
}

const listStacks: Command<Page<StackView>> = {
  name: 'stacks list',
  args: '[--search TEXT] [--category C] [--api-key KEY]',
  summary:
    'List the stacks you can apply: the global ones and your private ones (--search: in name, title and description).',
  api: 'public',
  options: { search: STRING, category: STRING, 'api-key': STRING },
  request: (a) => {
    const query = new URLSearchParams({ limit: '100', sort: 'name' });
    const search = a.optional('search');
    const category = a.choice('category', STACK_CATEGORIES);
    if (search) query.set('q', search);
    if (category) query.set('category', category);
    return { method: 'GET', path: `/stacks?${query.toString()}` };
  },
  render: ({ data, pagination }) => {
    const rows = table([
      ['NAME', 'CATEGORY', 'VISIBILITY', 'INPUTS', 'TITLE'],
      ...data.map((s) => [s.name, s.category, s.visibility, String(s.inputs.length), s.title]),
    ]);
    return pagination.total > data.length
      ? `${rows}\n(${data.length} of ${pagination.total} shown: narrow it with --search or --category)`
      : rows;
  },
};

const getStack: Command<StackView> = {
  name: 'stacks get',
  args: 'NAME [--api-key KEY]',
  summary: "Show a stack: its manifest's fields and the inputs a run takes.",
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/stacks/${segment(a.id('stack name'))}` }),
  render: (s) => {
    const about = fields([
      ['name', s.name],
      ['title', s.title],
      ['description', s.description || '-'],
      ['category', s.category],
      ['icon', s.icon],
      ['visibility', s.visibility],
      ['profiles', s.applicable_profiles?.join(', ') ?? 'all'],
      ['size', `${s.size_bytes} bytes`],
      ['sha256', s.sha256],
      ['created', date(s.created_at)],
      ['updated', date(s.updated_at)],
    ]);
    if (s.inputs.length === 0) return `${about}\n\nInputs: none`;
    const inputs = table([
      ['INPUT', 'TYPE', 'REQUIRED', 'DEFAULT', 'DESCRIPTION'],
      ...s.inputs.map((i) => [
        i.name,
        i.type,
        i.required ? 'yes' : 'no',
        i.default === undefined ? '-' : JSON.stringify(i.default),
        i.description ?? '',
      ]),
    ]);
    return `${about}\n\nInputs:\n${inputs}`;
  },
};

const addStack: Command<StackView> = {
  name: 'stacks add',
  args: 'FILE.zip | URL [--api-key KEY]',
  summary:
    "Add a stack from a .zip of an OpenTofu/Terraform module (with an optional manifest.json): a file sent, or an https:// URL the gateway fetches. Yours is private; a platform admin's is global.",
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  async request(a) {
    // A URL is a positional, not `--url`: that flag is the gateway's address in every command.
    const source = a.positional();
    if (!source) throw new UsageError('give a FILE.zip to send, or the https:// URL of one for the gateway to fetch');
    if (/^https?:\/\//i.test(source)) return { method: 'POST', path: '/stacks', body: { url: source } };
    const form = new FormData();
    // The file's name matters: without a manifest naming it, the stack is named after it.
    form.set(
      'package',
      new Blob([new Uint8Array(await readPackage(source))], { type: 'application/zip' }),
      path.basename(source),
    );
    return { method: 'POST', path: '/stacks', form };
  },
  render: (s) =>
    `Added stack ${s.name} (${s.visibility}): ${s.title}.${s.inputs.length > 0 ? ` Inputs: ${s.inputs.map((i) => i.name).join(', ')}.` : ''}`,
};

const downloadStack: Command<Saved> = {
  name: 'stacks download',
  args: 'NAME [-o FILE] [--api-key KEY]',
  summary:
    "Save a stack's .zip as it was added: to FILE, or to NAME.zip here (never over an existing NAME.zip; -o FILE replaces FILE).",
  api: 'public',
  positionals: 1,
  options: { output: { type: 'string', short: 'o' }, 'api-key': STRING },
  async request(a) {
    const name = a.id('stack name');
    const target = targetOf(a);
    // Checked before the download too, so nothing is fetched for a file that would not be written.
    if (!a.has('output') && (await exists(target)))
      throw new CliError(`${target} exists already: remove it, or choose another file with -o FILE`);
    return { method: 'GET', path: `/stacks/${segment(name)}/download`, binary: true };
  },
  async receive(body, a) {
    const zip = body as Buffer;
    const file = targetOf(a);
    try {
      await writeFile(file, zip, { flag: a.has('output') ? 'w' : 'wx' });
    } catch (error) {
      throw new CliError(`cannot write ${file}: ${reasonOf(error)}`);
    }
    return {
      name: a.id('stack name'),
      file,
      size_bytes: zip.length,
      sha256: createHash('sha256').update(zip).digest('hex'),
    };
  },
  render: (s) => `Saved stack ${s.name} to ${s.file} (${s.size_bytes} bytes, sha256 ${s.sha256}).`,
};

const deleteStack: Command<null> = {
  name: 'stacks delete',
  args: 'NAME [--api-key KEY]',
  summary: 'Delete a stack: your own private one (a platform admin: any). Its past runs are kept.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'DELETE', path: `/stacks/${segment(a.id('stack name'))}` }),
  render: (_, a) => `Deleted stack ${a.id('stack name')}.`,
};

/** The package's bytes, or a sentence saying why they cannot be read. */
async function readPackage(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${reasonOf(error)}`);
  }
}

function targetOf(a: Args): string {
  return a.optional('output') ?? `${a.id('stack name')}.zip`;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOENT') return 'no such file or folder';
  if (code === 'EISDIR') return 'it is a folder';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EEXIST') return 'it exists already';
  return error instanceof Error ? error.message : String(error);
}

export const stackCommands: Command[] = [listStacks, getStack, addStack, downloadStack, deleteStack] as Command[];
