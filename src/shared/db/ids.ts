import { randomBytes } from 'node:crypto';

/**
 * Opaque ids with a readable prefix, e.g. `org_3kq9...`. 16 random bytes in base32-ish hex.
 *
 * @example
 * newId('org'); // 'org_5f0c2b9e8d7a41c3b2a19f8e7d6c5b4a'
 */
export function newId(prefix: 'org' | 'proj' | 'key' | 'req' | 'usr' | 'node' | 'cls' | 'rate' | 'run' | 'stk'): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}

/** True for a string shaped like a project id (`proj_` and 32 hex digits): anything else is no project, without a query. */
export function isProjectId(value: string): boolean {
  return /^proj_[0-9a-f]{32}$/.test(value);
}
