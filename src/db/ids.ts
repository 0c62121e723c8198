import { randomBytes } from 'node:crypto';

/**
 * Opaque ids with a readable prefix, e.g. `org_3kq9...`. 16 random bytes in base32-ish hex.
 *
 * @example
 * newId('org'); // 'org_5f0c2b9e8d7a41c3b2a19f8e7d6c5b4a'
 */
export function newId(prefix: 'org' | 'proj' | 'key' | 'req'): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}
