import { GatewayError } from '../../shared/http/errors.js';

/** What a refused upload asks the client to wait, in seconds: an upload takes a few. */
const RETRY_AFTER_SECONDS = '5';

/**
 * Bounds the stack uploads this process reads at once, in all and per user:
 * each holds its package (up to 10 MiB, more while multipart is parsed) and
 * what it unpacks in memory, so without a bound a few users sending many at
 * once run the gateway out of memory. A slot is taken before the body is
 * read and given back when the answer is made, whatever it is. Over a
 * user's share: 429 `rate_limit_exceeded`; over the process's: 503
 * `server_busy`; both with `Retry-After`, and naming the setting. The
 * routes read and discard a refused upload's body before they answer
 * (`surfaces/api/upload-slot.ts`).
 *
 * @example
 * const release = slots.take(userId); // throws the 429 or 503
 * try { await readTheUpload(); } finally { release(); }
 */
export class UploadSlots {
  private inUse = 0;
  private readonly perUser = new Map<string, number>();

  constructor(private readonly limits: { inFlight: number; inFlightPerUser: number }) {}

  /** Uploads being read now. */
  get inFlight(): number {
    return this.inUse;
  }

  /** Takes a slot for `userId`, or throws; the function it returns gives the slot back (once). */
  take(userId: string): () => void {
    const mine = this.perUser.get(userId) ?? 0;
    if (mine >= this.limits.inFlightPerUser) {
      throw new GatewayError(
        'rate_limit_exceeded',
        `At most ${this.limits.inFlightPerUser} of your stack uploads are read at once (TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER); wait for one to finish.`,
        {
          headers: { 'Retry-After': RETRY_AFTER_SECONDS },
        },
      );
    }
    if (this.inUse >= this.limits.inFlight) {
      throw new GatewayError(
        'server_busy',
        'The gateway is reading as many stack uploads as it takes at once (TOLLGATE_UPLOADS_IN_FLIGHT); retry shortly.',
        { headers: { 'Retry-After': RETRY_AFTER_SECONDS } },
      );
    }
    this.inUse += 1;
    this.perUser.set(userId, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse -= 1;
      const left = (this.perUser.get(userId) ?? 1) - 1;
      if (left === 0) this.perUser.delete(userId);
      else this.perUser.set(userId, left);
    };
  }
}
