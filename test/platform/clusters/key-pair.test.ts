import ssh2 from 'ssh2';
import { describe, expect, it } from 'vitest';
import { readableKeyPair } from '../../../src/platform/clusters/key-pair.js';

describe("a cluster's SSH key pair", () => {
  it('is always one ssh2 reads back: 3,000 pairs, where ssh2 alone writes about one in 256 malformed', () => {
    // Before: about twelve of 3,000 failed (a public key with a leading zero byte written in 31
    // bytes).
    for (let i = 0; i < 3_000; i++) {
      const pair = readableKeyPair('tollgate cls_test');
      const parsed = ssh2.utils.parseKey(pair.private);
      expect(parsed instanceof Error || Array.isArray(parsed) ? String(parsed) : 'readable').toBe('readable');
      expect(ssh2.utils.parseKey(pair.public)).not.toBeInstanceOf(Error);
    }
  });
});
