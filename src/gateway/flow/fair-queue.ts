import { BANDS } from './bands.js';

/** What the queue needs of a waiting request. */
export interface Queued {
  orgId: string;
  /** Its band's rank: 0 (interactive) is served before 1, 2 and 3 (batch). */
  band: number;
}

/**
 * One organization in one band: its waiting requests (oldest first) and the tokens it was served,
 * over its weight.
 */
interface Flow<T> {
  waiting: T[];
  /**
   * Index of the oldest request still waiting (the array is compacted now and then, not shifted
   * each pop).
   */
  head: number;
  /**
   * Virtual tokens served: weighted tokens over the organization's share weight (the Virtual Token
   * Counter).
   */
  served: number;
}

/**
 * The order a saturated fleet serves waiting requests in: the highest band
 * first; within a band, the organization served the fewest virtual tokens
 * (tokens weighted by kind, over the organization's share weight), its oldest
 * request first. That is the Virtual Token Counter (Sheng et al., OSDI 2024):
 * a newly waiting organization's counter is lifted to the least counter of
 * those waiting, so idle time is not banked, and two organizations kept
 * waiting are served within one request's tokens of each other. Four keys of
 * one organization are one flow: one share.
 *
 * Pure and synchronous: `FlowControl` decides when there is room, this only
 * which request goes next.
 *
 * @example
 * const queue = new FairQueue<Entry>();
 * queue.push({ orgId: 'org_a', band: 1 });
 * queue.pop(); // the entry
 */
export class FairQueue<T extends Queued> {
  private readonly bands: Array<Map<string, Flow<T>>> = BANDS.map(() => new Map<string, Flow<T>>());
  /**
   * Per band, the counter of the last organization served: where a flow that starts waiting is
   * lifted to.
   */
  private readonly floors: number[] = BANDS.map(() => 0);
  private count = 0;
  private readonly perOrg = new Map<string, number>();

  get size(): number {
    return this.count;
  }

  /** Requests of one organization waiting, in every band. */
  waitingOf(orgId: string): number {
    return this.perOrg.get(orgId) ?? 0;
  }

  push(item: T): void {
    const flows = this.bands[item.band]!;
    let flow = flows.get(item.orgId);
    if (!flow) {
      flow = { waiting: [], head: 0, served: this.floors[item.band]! };
      flows.set(item.orgId, flow);
    } else if (flow.head === flow.waiting.length) {
      // Waiting again after a pause: no credit for the time it was idle.
      flow.served = Math.max(flow.served, this.floors[item.band]!);
    }
    flow.waiting.push(item);
    this.count++;
    this.perOrg.set(item.orgId, (this.perOrg.get(item.orgId) ?? 0) + 1);
  }

  /** The band of the request `pop` takes next; undefined when none waits. */
  nextBand(): number | undefined {
    if (this.count === 0) return undefined;
    for (let band = 0; band < this.bands.length; band++) {
      for (const flow of this.bands[band]!.values()) if (flow.head < flow.waiting.length) return band;
    }
    return undefined;
  }

  /** The request `pop` takes next, left in the queue; undefined when none waits. */
  peek(): T | undefined {
    const next = this.next();
    return next && next.least.waiting[next.least.head];
  }

  /** The next request to dispatch, taken out of the queue; undefined when none waits. */
  pop(): T | undefined {
    const next = this.next();
    if (!next) return undefined;
    const { least, band } = next;
    const item = least.waiting[least.head]!;
    least.waiting[least.head++] = undefined as unknown as T;
    if (least.head > 64 && least.head * 2 > least.waiting.length) {
      least.waiting.splice(0, least.head);
      least.head = 0;
    }
    this.floors[band] = Math.max(this.floors[band]!, least.served);
    this.taken(item);
    return item;
  }

  /** The flow whose oldest request goes next, and its band. */
  private next(): { least: Flow<T>; band: number } | undefined {
    if (this.count === 0) return undefined;
    for (let band = 0; band < this.bands.length; band++) {
      let least: Flow<T> | undefined;
      for (const flow of this.bands[band]!.values()) {
        if (flow.head < flow.waiting.length && (!least || flow.served < least.served)) least = flow;
      }
      if (least) return { least, band };
    }
    return undefined;
  }

  /**
   * Takes a waiting request out (its client left, or it waited too long); false when it was not
   * waiting.
   */
  remove(item: T): boolean {
    const flow = this.bands[item.band]!.get(item.orgId);
    if (!flow) return false;
    const at = flow.waiting.indexOf(item, flow.head);
    if (at < 0) return false;
    flow.waiting.splice(at, 1);
    this.taken(item);
    return true;
  }

  /**
   * Counts tokens served to an organization in a band: `virtualTokens` is the weighted tokens over
   * its share weight. Called when a request is dispatched (its expected tokens) and when it ends
   * (the difference).
   */
  serve(orgId: string, band: number, virtualTokens: number): void {
    const flows = this.bands[band]!;
    const flow = flows.get(orgId);
    if (flow) flow.served += virtualTokens;
    else flows.set(orgId, { waiting: [], head: 0, served: this.floors[band]! + virtualTokens });
  }

  /** An organization's counter in a band, for the operator's view; null when it has none. */
  servedOf(orgId: string, band: number): number | null {
    return this.bands[band]!.get(orgId)?.served ?? null;
  }

  /** Each band's waiting requests by organization, for metrics and the operator's view. */
  waitingByBand(): Array<Map<string, number>> {
    return this.bands.map((flows) => {
      const waiting = new Map<string, number>();
      for (const [orgId, flow] of flows) {
        const n = flow.waiting.length - flow.head;
        if (n > 0) waiting.set(orgId, n);
      }
      return waiting;
    });
  }

  /**
   * Forgets organizations that wait for nothing and were served no more than their band's floor:
   * were they to wait again, they would be lifted to the floor anyway, so nothing is lost. Keeps
   * the maps bounded by the organizations active lately.
   */
  prune(): void {
    this.bands.forEach((flows, band) => {
      for (const [orgId, flow] of flows) {
        if (flow.head === flow.waiting.length && flow.served <= this.floors[band]!) flows.delete(orgId);
      }
    });
  }

  private taken(item: T): void {
    this.count--;
    const left = (this.perOrg.get(item.orgId) ?? 1) - 1;
    if (left === 0) this.perOrg.delete(item.orgId);
    else this.perOrg.set(item.orgId, left);
  }
}
