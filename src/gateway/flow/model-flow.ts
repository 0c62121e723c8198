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
  /** Of those, the requests sent ahead of their band (`belowShare`), by band. */
  readonly aheadByBand = BANDS.map(() => 0);
  readonly inFlightByOrg = new Map<string, number>();
  /** The share weight of each organization in flight, as its last request gave it. */
  private readonly weights = new Map<string, number>();
  readonly expected = new CompletionForecast();
  /** When a request of a better band than `batch` last asked for the model (performance.now()). */
  betterBandAt = -Infinity;
  /**
   * When a request of another organization than the one before it last asked for the model
   * (performance.now()): the share headroom is kept only while organizations mix, so a lone one
   * has every slot.
   */
  mixedAt = -Infinity;
  private lastAsker: string | null = null;
  /** When each slot this gateway handed to another (`FlowPeers`) stops counting as taken here. */
  private readonly lent: number[] = [];

  asked(orgId: string): void {
    if (this.lastAsker !== null && this.lastAsker !== orgId) this.mixedAt = performance.now();
    this.lastAsker = orgId;
  }

  started(band: number, orgId: string, weight: number, ahead: boolean): void {
    this.inFlight++;
    this.inFlightByBand[band]!++;
    if (ahead) this.aheadByBand[band]!++;
    this.inFlightByOrg.set(orgId, (this.inFlightByOrg.get(orgId) ?? 0) + 1);
    this.weights.set(orgId, weight);
  }

  ended(band: number, orgId: string, ahead: boolean): void {
    this.inFlight--;
    this.inFlightByBand[band]!--;
    if (ahead) this.aheadByBand[band]!--;
    const left = this.inFlightByOrg.get(orgId)! - 1;
    if (left > 0) this.inFlightByOrg.set(orgId, left);
    else {
      this.inFlightByOrg.delete(orgId);
      this.weights.delete(orgId);
    }
  }

  /**
   * Whether a request of `orgId` would leave it within its share of the model's `slots` (the
   * slots over the share weights of the organizations in flight and its own) while another
   * organization holds more than its share. Such a request goes ahead of its band
   * (`FlowPass.priority`), so a flood that holds every slot does not keep a newcomer waiting for a
   * stream to end, and no further than its share: its requests in flight counted, preempted or not.
   */
  belowShare(orgId: string, weight: number, slots: number | null): boolean {
    if (slots === null) return false;
    let weights = this.weights.has(orgId) ? 0 : weight;
    for (const w of this.weights.values()) weights += w;
    const share = slots / weights;
    if (((this.inFlightByOrg.get(orgId) ?? 0) + 1) / weight > share) return false;
    for (const [other, count] of this.inFlightByOrg) {
      if (other !== orgId && count / (this.weights.get(other) ?? 1) > share) return true;
    }
    return false;
  }

  /**
   * Whether `orgId`, with one more request, would hold the most of the model's engines (over share
   * weights): the flood that leaves `shareHeadroom` free on engines that cannot preempt.
   */
  leads(orgId: string, weight: number): boolean {
    const mine = ((this.inFlightByOrg.get(orgId) ?? 0) + 1) / weight;
    for (const [other, count] of this.inFlightByOrg) {
      if (other !== orgId && count / (this.weights.get(other) ?? 1) >= mine) return false;
    }
    return true;
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
