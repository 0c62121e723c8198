import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolRefusal } from './types.js';

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
 * decided on the final path: every symbolic link followed, a dangling one
 * too (a write through `notes.md -> /elsewhere/x` lands at `/elsewhere/x`),
 * so `link-to-etc/passwd` or `../x` are outside however they are spelled.
 *
 * @example
 * const { path, inside } = await locate('/home/me/app', '../secrets.txt'); // inside: false
 */
export async function locate(root: string, requested: string): Promise<Located> {
  const absolute = path.resolve(root, requested);
  const [realRoot, real] = await Promise.all([realpath(root), finalPath(absolute)]);
  const inside = isWithin(realRoot, real);
  return { path: absolute, shown: inside ? path.relative(root, absolute) || '.' : absolute, inside };
}

/**
 * Whether `file` (a project file the agent reads on its own, such as AGENTS.md) resolves inside
 * `root`.
 */
export async function resolvesInside(root: string, file: string): Promise<boolean> {
  try {
    const [realRoot, real] = await Promise.all([realpath(root), finalPath(file)]);
    return isWithin(realRoot, real);
  } catch {
    return false;
  }
}

/**
 * Refuses a write prepared as inside the project whose path has since come to lead out (a link
 * swapped in).
 */
export async function checkStillInside(root: string, where: Located): Promise<void> {
  if (where.inside && !(await resolvesInside(root, where.path)))
    throw new ToolRefusal(`${where.shown} now leads outside the project (a symbolic link): not written`);
}

export function isWithin(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** Links followed before giving up (the kernel's own limit is 40). */
const MOST_LINKS = 40;

/**
 * Where a write to `absolute` would land. `realpath` answers for what
 * exists; for what does not, the nearest existing folder is resolved and,
 * when the missing part starts with a dangling link, the link's target is
 * followed in its turn (a write follows it and creates the target).
 */
async function finalPath(absolute: string, links = 0): Promise<string> {
  let current = absolute;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(await realpath(current), ...rest);
    } catch {
      const target = await readlink(current).catch(() => null);
      if (target !== null && (await lstat(current)).isSymbolicLink()) {
        // A dangling link: resolve its folder, then follow the target (relative to that folder).
        if (links >= MOST_LINKS) throw new ToolRefusal(`${absolute}: too many symbolic links`);
        const folder = await finalPath(path.dirname(current), links + 1);
        return finalPath(path.join(path.resolve(folder, target), ...rest), links + 1);
      }
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
}
