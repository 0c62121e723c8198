import { describe, expect, it } from 'vitest';
import { Passwords } from '../../../src/platform/people/passwords.js';

describe('password hashes', () => {
  const passwords = new Passwords(10);

  it('verifies the right password only, with a salt of its own each time', async () => {
    const first = await passwords.hash('correct horse battery staple');
    const second = await passwords.hash('correct horse battery staple');
    expect(first).toMatch(/^scrypt\$10\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(second).not.toBe(first);
    expect(await passwords.verify('correct horse battery staple', first)).toBe(true);
    expect(await passwords.verify('correct horse battery stapler', first)).toBe(false);
    // Unicode forms that look alike are the same password.
    const composed = await passwords.hash('caf\u00e9-password');
    expect(await passwords.verify('cafe\u0301-password', composed)).toBe(true);
  });

  it('keeps verifying hashes made at another cost, and says which to redo', async () => {
    const old = await passwords.hash('an old password');
    const raised = new Passwords(11);
    expect(await raised.verify('an old password', old)).toBe(true);
    expect(raised.needsRehash(old)).toBe(true);
    expect(raised.needsRehash(await raised.hash('a new one here'))).toBe(false);
  });

  it('answers false, never throws, for stored values it did not make', async () => {
    for (const stored of [
      '',
      'plain',
      'scrypt$10$8$1$salt',
      'bcrypt$10$8$1$a$b',
      'scrypt$40$8$1$AAAA$AAAA',
      'scrypt$10$0$1$AAAA$AAAA',
      'scrypt$x$8$1$AAAA$AAAA',
    ]) {
      expect(await passwords.verify('anything at all', stored), stored).toBe(false);
    }
  });

  it('an unknown user costs a verification too', async () => {
    expect(await passwords.verifyNobody('whatever password')).toBe(false);
  });

  it('refuses a cost out of range', () => {
    expect(() => new Passwords(9)).toThrow();
    expect(() => new Passwords(21)).toThrow();
  });

  it('runs many hashes, two at a time, all correct', async () => {
    const hashes = await Promise.all(Array.from({ length: 8 }, (_, i) => passwords.hash(`password number ${i}`)));
    const checks = await Promise.all(hashes.map((hash, i) => passwords.verify(`password number ${i}`, hash)));
    expect(checks).toEqual(Array(8).fill(true));
  });
});
