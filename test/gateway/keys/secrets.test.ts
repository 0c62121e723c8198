import { describe, expect, it } from 'vitest';
import {
  generateSecret,
  hashSecret,
  isWellFormedSecret,
  sameHash,
  secretHint,
} from '../../../src/gateway/keys/secrets.js';
import { expiryDate } from '../../../src/gateway/keys/service.js';

describe('key secrets', () => {
  it('start with the prefix, are unique and well formed', () => {
    const a = generateSecret('sk-gw-');
    const b = generateSecret('sk-gw-');
    expect(a.startsWith('sk-gw-')).toBe(true);
    expect(a).not.toBe(b);
    expect(isWellFormedSecret(a, 'sk-gw-')).toBe(true);
    expect(isWellFormedSecret(a, 'sk-other-')).toBe(false);
    expect(isWellFormedSecret(`${a}x`, 'sk-gw-')).toBe(false);
  });

  it('are stored as a hash and shown only as a hint', () => {
    const secret = generateSecret('sk-gw-');
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret(secret)).not.toContain(secret.slice(6));
    expect(sameHash(hashSecret(secret), hashSecret(secret))).toBe(true);
    expect(sameHash(hashSecret(secret), hashSecret(`${secret}x`))).toBe(false);
    expect(secretHint(secret, 'sk-gw-')).toBe(`sk-gw-…${secret.slice(-4)}`);
  });

  it('expire after the chosen span', () => {
    const from = new Date('2026-01-31T00:00:00Z');
    expect(expiryDate('never', from)).toBeNull();
    expect(expiryDate('7d', from)!.toISOString()).toBe('2026-02-07T00:00:00.000Z');
    expect(expiryDate('30d', from)!.toISOString()).toBe('2026-03-02T00:00:00.000Z');
    expect(expiryDate('90d', from)!.toISOString()).toBe('2026-05-01T00:00:00.000Z');
    expect(expiryDate('1y', from)!.toISOString()).toBe('2027-01-31T00:00:00.000Z');
  });
});
