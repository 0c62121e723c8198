import { BANDS } from './bands.js';
import { CompletionForecast } from './completion-forecast.js';
import { FairQueue, type Queued } from './fair-queue.js';
import type { FlowPass, FlowRequest, WaitingHead } from './flow-types.js';

/** A request waiting for room, and how to let it go. */
export interface Waiter extends Queued {
  request: FlowRequest;
  enqueuedAt: number;
  resolve(pass: FlowPass): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

/** One model's flow on this gateway: who waits for it, and what this gateway has on its engines. */
export class ModelFlow {
  readonly queue = new FairQueue<Waiter>();
  /** Requests this gateway dispatched to the model that have not ended, in all and by band. */
  inFlight = 0;
  readonly inFlightByBand = BANDS.map(() => 0);
  readonly inFlightByOrg = new Map<string, number>();
  readonly expected = new CompletionForecast();
  /** When a request of a better band than `batch` last asked for the model (performance.now()). */
  betterBandAt = -Infinity;
  /** When each slot this gateway handed to another (`FlowPeers`) stops counting as taken here. */
  private readonly lent: number[] = [];

  started(band: number, orgId: string): void {
    this.inFlight++;
    this.inFlightByBand[band]!++;
    this.inFlightByOrg.set(orgId, (this.inFlightByOrg.get(orgId) ?? 0) + 1);
  }

  ended(band: number, orgId: string): void {
    this.inFlight--;
    this.inFlightByBand[band]!--;
    const left = this.inFlightByOrg.get(orgId)! - 1;
    if (left > 0) this.inFlightByOrg.set(orgId, left);
    else this.inFlightByOrg.delete(orgId);
  }

  /** Counts a slot handed to another gateway as taken for `forMs`. */
  lend(forMs: number): void {
    this.lent.push(performance.now() + forMs);
  }

  /** Slots taken by this gateway: its requests in flight, and slots lent not yet seen taken. */
  taken(): number {
    const now = performance.now();
    while (this.lent.length > 0 && this.lent[0]! <= now) this.lent.shift();
    return this.inFlight + this.lent.length;
  }

  /** The first waiting request as the peers rank it; null when none waits. */
  head(): WaitingHead | null {
    const head = this.queue.peek();
    return head ? { band: head.band, orgId: head.orgId } : null;
  }
}
