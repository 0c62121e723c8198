import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseAmount } from '../gateway/billing/money.js';
import { UsageError } from '../surfaces/cli/errors.js';
import { resolveKeySettings, type CliSettings } from '../surfaces/cli/settings.js';
import { isMode, type Mode } from './approval.js';
import { type AgentLimits, limitsFrom } from './limits.js';

/** `tollgate code`'s settings: the config file under flags and the environment. */
export interface AgentSettings extends CliSettings {
  /** The model from -m or the config file; undefined lets the agent take the key's first chat model. */
  model?: string;
  approval: Mode;
  limits: AgentLimits;
  /**
   * Below this balance (nanos) the agent warns once: `wallet_warn` in the config file, default
   * 1.00.
   */
  walletWarnNanos: bigint;
  configDir: string;
  sessionsDir: string;
}

interface ConfigFile {
  url?: string;
  api_key?: string;
  model?: string;
  approval?: string;
  limits?: unknown;
  wallet_warn?: unknown;
}

/**
 * The config folder: $TOLLGATE_CONFIG_DIR, else $XDG_CONFIG_HOME/tollgate,
 * else ~/.config/tollgate. Its `config.json` may set `url`, `api_key`,
 * `model`, `approval` and `limits`; flags win over the environment, which
 * wins over the file. Like ../settings.ts, the one place the agent reads the
 * environment.
 *
 * @example
 * const settings = await resolveAgentSettings({ model: 'sim-chat' });
 */
export async function resolveAgentSettings(
  flags: { url?: string; apiKey?: string; model?: string; approval?: string; sessionsDir?: string },
  env: NodeJS.ProcessEnv = process.env,
): Promise<AgentSettings> {
  const configDir =
    env.TOLLGATE_CONFIG_DIR || path.join(env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config'), 'tollgate');
  const file = await readConfig(path.join(configDir, 'config.json'));
  const fromFile: NodeJS.ProcessEnv = { TOLLGATE_URL: file.url, TOLLGATE_API_KEY: file.api_key };
  const key = resolveKeySettings({ url: flags.url, apiKey: flags.apiKey }, { ...fromFile, ...definedOf(env) });
  const approval = flags.approval ?? file.approval ?? 'ask';
  if (!isMode(approval))
    throw new UsageError(`--approval must be one of ask, auto-edit, yolo, plan, not "${approval}"`);
  let limits: AgentLimits;
  try {
    limits = limitsFrom(file.limits);
  } catch (error) {
    throw new UsageError(`${path.join(configDir, 'config.json')}: ${(error as Error).message}`);
  }
  const walletWarnNanos = walletWarnOf(file.wallet_warn, path.join(configDir, 'config.json'));
  const sessionsDir = flags.sessionsDir ?? env.TOLLGATE_SESSIONS_DIR ?? path.join(configDir, 'sessions');
  return {
    ...key,
    model: flags.model ?? file.model,
    approval,
    limits,
    walletWarnNanos,
    configDir,
    sessionsDir: path.resolve(sessionsDir),
  };
}

function walletWarnOf(value: unknown, file: string): bigint {
  if (value === undefined) return parseAmount('1');
  try {
    if (typeof value !== 'string') throw new Error('not a string');
    const nanos = parseAmount(value);
    if (nanos < 0n) throw new Error('negative');
    return nanos;
  } catch {
    throw new UsageError(`${file}: wallet_warn must be an amount as a string, such as "0.50"`);
  }
}

/** Whether colours are wanted: a terminal, and NO_COLOR not set (no-color.org). */
export function wantsColour(isTty: boolean, env: NodeJS.ProcessEnv = process.env): boolean {
  return isTty && !env.NO_COLOR;
}

async function readConfig(file: string): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return {};
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return parsed;
  } catch (error) {
    throw new UsageError(`${file} is not valid: ${(error as Error).message}`);
  }
}

function definedOf(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
}
