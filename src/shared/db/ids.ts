import { randomFillSync } from 'node:crypto';

/**
 * Random bytes drawn 4 KiB at a time (256 ids): one `randomBytes` a request was about 1 % of a chat
 * request's CPU.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = POOL_BYTES;

/** 16 bytes from the pool as 32 hex digits; each byte is handed out once. */
function randomHex16(): string {
  if (used + 16 > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    used = 0;
  }
  const hex = pool.toString('hex', used, used + 16);
  used += 16;
  return hex;
}

/**
 * Opaque ids with a readable prefix, e.g. `org_3kq9...`. 16 random bytes in base32-ish hex.
 *
 * @example
 * newId('org'); // 'org_5f0c2b9e8d7a41c3b2a19f8e7d6c5b4a'
 */
export function newId(
  prefix: 'org' | 'proj' | 'key' | 'req' | 'usr' | 'node' | 'cls' | 'rate' | 'run' | 'stk',
): string {
  return `${prefix}_${randomHex16()}`;
}

/**
 * True for a string shaped like a project id (`proj_` and 32 hex digits): anything else is no
 * project, without a query.
 */
export function isProjectId(value: string): boolean {
  return /^proj_[0-9a-f]{32}$/.test(value);
}
