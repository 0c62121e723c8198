import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { CliError, UsageError } from './errors.js';

// Where the CLI finds the gateway and the operator token (or, for the public
// API, an API key). The only module of the CLI that reads the environment;
// flags win over it.
//
// @example
// const { url, token } = await resolveSettings({ url: values.url, token: values.token });

/** The gateway's address and the credential a command sends: the operator token or an API key. */
export interface CliSettings {
  /** The gateway's base address, without a trailing slash. */
  url: string;
  token: string;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';
const DEFAULT_DATA_DIR = '.tollgate';
const TOKEN_FILE = 'admin-token';

export async function resolveSettings(
  flags: { url?: string; token?: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<CliSettings> {
  const url = normalizeUrl(flags.url || env.TOLLGATE_URL || DEFAULT_URL);
  const token =
    flags.token || env.TOLLGATE_ADMIN_TOKEN || (await tokenFromFile(env.TOLLGATE_DATA_DIR || DEFAULT_DATA_DIR));
  return { url, token };
}

/**
 * The gateway and an API key, for commands on the public `/v1` API: `--api-key`,
 * else TOLLGATE_API_KEY. Without either the command line is incomplete (exit 2).
 *
 * @example
 * const { url, token } = resolveKeySettings({ url: values.url, apiKey: values['api-key'] });
 */
export function resolveKeySettings(
  flags: { url?: string; apiKey?: string },
  env: NodeJS.ProcessEnv = process.env,
): CliSettings {
  const url = normalizeUrl(flags.url || env.TOLLGATE_URL || DEFAULT_URL);
  const token = flags.apiKey || env.TOLLGATE_API_KEY?.trim();
  if (!token) throw new UsageError('an API key is required: pass --api-key KEY or set TOLLGATE_API_KEY');
  return { url, token };
}

/**
 * For a command that takes either credential: the API key when one is given
 * (`--api-key`, else TOLLGATE_API_KEY unless `--token` names the operator),
 * else null (the operator token, `resolveSettings`).
 *
 * @example
 * const key = keySettingsIfGiven({ url, apiKey: values['api-key'], token: values.token });
 */
export function keySettingsIfGiven(
  flags: { url?: string; apiKey?: string; token?: string },
  env: NodeJS.ProcessEnv = process.env,
): CliSettings | null {
  const token = flags.apiKey || (flags.token ? undefined : env.TOLLGATE_API_KEY?.trim());
  return token ? { url: normalizeUrl(flags.url || env.TOLLGATE_URL || DEFAULT_URL), token } : null;
}

function normalizeUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`"${text}" is not a URL: use --url http://host:port`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url must be an http:// or https:// address, not "${text}"`);
  return url.href.replace(/\/+$/, '');
}

// The gateway writes the token it generated into its data folder on first start.
async function tokenFromFile(dataDir: string): Promise<string> {
  const file = path.resolve(dataDir, TOKEN_FILE);
  let token = '';
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new CliError(`cannot read the operator token from ${file}: ${(error as Error).message}`);
  }
  if (token === '') {
    throw new CliError(
      `no operator token: pass --token, set TOLLGATE_ADMIN_TOKEN, or set TOLLGATE_DATA_DIR to the gateway's data folder (looked for ${file})`,
    );
  }
  return token;
}
