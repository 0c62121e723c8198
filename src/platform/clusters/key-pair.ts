import { lazily } from '../../shared/lazy-require.js';

const ssh2 = lazily<typeof import('ssh2')>('ssh2');

/** Pairs made before giving up: one in 256 is unreadable, so eight in a row are one in 2^64. */
const KEY_PAIR_TRIES = 8;

/**
 * An ed25519 key pair that ssh2 (and OpenSSH) can read back. ssh2's `generateKeyPairSync` writes a
 * public key whose first byte is zero in 31 bytes, not 32 (about one pair in 256): its private key
 * file is then malformed, and no node could be reached with it. Such a pair is made again.
 */
export function readableKeyPair(comment: string): { public: string; private: string } {
  for (let attempt = 0; attempt < KEY_PAIR_TRIES; attempt++) {
    const pair = ssh2().utils.generateKeyPairSync('ed25519', { comment });
    const parsed = ssh2().utils.parseKey(pair.private);
    if (!(parsed instanceof Error) && !Array.isArray(parsed) && !(ssh2().utils.parseKey(pair.public) instanceof Error))
      return pair;
  }
  throw new Error(`no readable ed25519 key pair in ${KEY_PAIR_TRIES} tries`);
}
