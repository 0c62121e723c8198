import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Key secrets: `<prefix>` + 43 url-safe characters (32 random bytes).
// Only the SHA-256 is stored. A plain hash is enough here because the secret
// carries 256 bits of randomness: there is nothing to guess or brute-force.
//
// @example
// const secret = generateSecret('sk-gw-'); // 'sk-gw-Xq3…'
// const stored = hashSecret(secret);

/** A new secret: the prefix and 32 random bytes, url-safe base64. */
export function generateSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** What is stored of a secret: its SHA-256, in hex. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Shows which key this is without revealing it: the prefix and the last four characters. */
export function secretHint(secret: string, prefix: string): string {
  return `${prefix}…${secret.slice(-4)}`;
}

/** True when `secret` looks like one of ours: the prefix, then 43 base64url characters. */
export function isWellFormedSecret(secret: string, prefix: string): boolean {
  return (
    secret.length === prefix.length + 43 &&
    secret.startsWith(prefix) &&
    /^[A-Za-z0-9_-]+$/.test(secret.slice(prefix.length))
  );
}

/** Constant-time comparison of two hex digests of equal length. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}
