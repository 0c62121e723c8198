import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { z } from 'zod';

/**
 * Passwords are 8 to 128 characters: long enough to mean something, short enough that hashing one
 * is never a denial of service.
 */
const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 128;

/**
 * A new password as every surface checks it (the API, the operator API, the portal's forms), with
 * the same messages.
 */
export const passwordField = z
  .string()
  .min(PASSWORD_MIN, `Must be at least ${PASSWORD_MIN} characters.`)
  .max(PASSWORD_MAX, `Must be at most ${PASSWORD_MAX} characters.`);

/** scrypt's cost (log2 of N) by default: 2^15 with r = 8 uses 32 MiB and about 50-100 ms per hash. */
const DEFAULT_PASSWORD_COST = 15;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_LENGTH = 32;
/** At most this many hashes run at once (each takes 128 * N * r bytes); the rest wait their turn. */
const MAX_CONCURRENT_HASHES = 2;

/**
 * Password hashing with scrypt (memory-hard), a per-password random salt, and
 * the parameters stored with the hash, so the cost can be raised later:
 * hashes made at the old cost keep verifying, and `needsRehash` says which to
 * redo at the next sign-in.
 *
 * @example
 * const passwords = new Passwords(15);
 * const stored = await passwords.hash('correct horse battery staple');
 * await passwords.verify('correct horse battery staple', stored); // true
 */
export class Passwords {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /**
   * A hash of nothing anyone knows, verified against when there is no user, so a wrong email costs
   * the same time as a wrong password.
   */
  private decoy: Promise<string> | undefined;

  constructor(private readonly cost: number = DEFAULT_PASSWORD_COST) {
    if (!Number.isInteger(cost) || cost < 10 || cost > 20)
      throw new Error(`password cost must be an integer from 10 to 20, got ${cost}`);
  }

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await this.derive(password, salt, { N: 2 ** this.cost, r: BLOCK_SIZE, p: PARALLELISM });
    return ['scrypt', this.cost, BLOCK_SIZE, PARALLELISM, salt.toString('base64url'), key.toString('base64url')].join(
      '$',
    );
  }

  /** True when `password` matches `stored`; false for a stored value this class did not make. */
  async verify(password: string, stored: string): Promise<boolean> {
    const parts = stored.split('$');
    if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
    const [cost, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
    if (![cost, r, p].every(Number.isInteger) || cost < 10 || cost > 20 || r < 1 || r > 32 || p < 1 || p > 16)
      return false;
    const expected = Buffer.from(parts[5]!, 'base64url');
    const key = await this.derive(
      password,
      Buffer.from(parts[4]!, 'base64url'),
      { N: 2 ** cost, r, p },
      expected.length,
    );
    return key.length === expected.length && timingSafeEqual(key, expected);
  }

  /** Spends the time of one verification and answers false: for a sign-in whose email names no user. */
  async verifyNobody(password: string): Promise<false> {
    this.decoy ??= this.hash(randomBytes(16).toString('hex'));
    await this.verify(password, await this.decoy);
    return false;
  }

  /** Whether a stored hash was made at a lower cost than today's. */
  needsRehash(stored: string): boolean {
    return Number(stored.split('$')[1]) < this.cost;
  }

  private async derive(
    password: string,
    salt: Buffer,
    options: ScryptOptions & { N: number; r: number },
    length = KEY_LENGTH,
  ): Promise<Buffer> {
    await this.turn();
    try {
      return await new Promise<Buffer>((resolve, reject) =>
        scrypt(
          password.normalize('NFC'),
          salt,
          length,
          { ...options, maxmem: 256 * options.N * options.r },
          (error, key) => (error ? reject(error) : resolve(key)),
        ),
      );
    } finally {
      // The slot passes straight to the next in line, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }

  private async turn(): Promise<void> {
    if (this.running < MAX_CONCURRENT_HASHES) this.running += 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
}
