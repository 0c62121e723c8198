import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS package loaded the first time it is used instead of when the gateway starts: Docker's,
 * Redis's and SSH's clients and the zip libraries cost a start about 0.6 s of CPU, and the embedded
 * default (PGlite, in-memory limits, the simulator) uses none of them.
 *
 * @example
 * const ssh2 = lazily<typeof import('ssh2')>('ssh2');
 * const client = new (ssh2().Client)();
 */
export function lazily<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
