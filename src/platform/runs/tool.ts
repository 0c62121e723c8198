import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { GatewayError } from '../../shared/http/errors.js';

/**
 * The OpenTofu or Terraform command line a run uses: the configured one
 * (`TOLLGATE_TOFU_BIN`, a path or a command name looked up on PATH), else
 * `tofu`, else `terraform`, on PATH. Null when none is there: applying then
 * answers 503 and queues nothing. Looked up on every call, so installing the
 * tool needs no restart.
 *
 * @example
 * findTool({ configured: undefined, pathList: process.env.PATH }); // '/usr/local/bin/tofu' or null
 */
export function findTool(options: { configured?: string; pathList?: string }): string | null {
  const candidates = options.configured ? [options.configured] : ['tofu', 'terraform'];
  for (const candidate of candidates) {
    const found = candidate.includes('/')
      ? executable(path.resolve(candidate))
      : onPath(candidate, options.pathList ?? '');
    if (found) return found;
  }
  return null;
}

function onPath(name: string, pathList: string): string | null {
  for (const folder of pathList.split(path.delimiter).filter(Boolean)) {
    const found = executable(path.join(folder, name));
    if (found) return found;
  }
  return null;
}

function executable(file: string): string | null {
  try {
    if (!statSync(file).isFile()) return null;
    accessSync(file, constants.X_OK);
    return file;
  } catch {
    return null;
  }
}

/** The tool, or a 503 naming the setting: nothing is queued without one. */
export function requireTool(options: { configured?: string; pathList?: string }): string {
  const found = findTool(options);
  if (!found) {
    throw new GatewayError(
      'runner_unavailable',
      'This gateway has no OpenTofu or Terraform to apply stacks with: install `tofu` on its PATH, or set TOLLGATE_TOFU_BIN to it.',
      {
        headers: { 'Retry-After': '60' },
      },
    );
  }
  return found;
}
