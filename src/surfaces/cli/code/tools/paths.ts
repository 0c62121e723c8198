import { realpath } from 'node:fs/promises';
import path from 'node:path';

/** A path the model named, resolved against the project, and whether it stays inside it. */
export interface Located {
  /** Absolute. */
  path: string;
  /** As shown to the person: relative to the project when inside it. */
  shown: string;
  inside: boolean;
}

/**
 * Resolves `requested` against the project folder. Whether it is inside is
 * decided on real paths (symbolic links followed, for the part that exists),
 * so `link-to-etc/passwd` or `../x` are outside however they are spelled.
 *
 * @example
 * const { path, inside } = await locate('/home/me/app', '../secrets.txt'); // inside: false
 */
export async function locate(root: string, requested: string): Promise<Located> {
  const absolute = path.resolve(root, requested);
  const [realRoot, real] = await Promise.all([realpath(root), realOfNearest(absolute)]);
  const inside = isWithin(realRoot, real);
  return { path: absolute, shown: inside ? path.relative(root, absolute) || '.' : absolute, inside };
}

export function isWithin(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

// A file about to be written does not exist yet: its nearest existing folder decides.
async function realOfNearest(absolute: string): Promise<string> {
  let current = absolute;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(current), ...rest);
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
}
