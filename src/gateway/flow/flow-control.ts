import { BANDS, bandRank, enginePriority } from './bands.js';
import { FlowTally } from './flow-tally.js';
import { ModelFlow, type Waiter } from './model-flow.js';
import { overloaded } from './refusals.js';
import type { FlowSettings } from '../../config/fleet-types.js';
import type { FlowEvents, FlowPass, FlowPeers, FlowRequest, FlowSnapshot, RoomSource } from './flow-types.js';

const BATCH = bandRank('batch');
const DEFAULT = bandRank('default');

const NO_EVENTS: FlowEvents = { dispatched() {}, refused() {}, left() {}, served() {} };

/**
 * Flow control between admission and the engines: a request that has passed
 * its key's limits and hold goes to its model's engines at once when they have
 * room; when they are full it waits here, not in an engine's
 * first-come-first-served queue, and is dispatched when room appears (a
 * request of this gateway ends, or the engines' metrics show room): the
 * highest band first, and within a band the organization served the fewest
 * weighted tokens (`FairQueue`). Work-conserving: nothing waits while a
 * replica has room. Waits are bounded (per organization, in all, in time),
 * with an overloaded refusal that names the setting.
 *
 * @example
 * const pass = await flow.enter({ modelId, orgId, band: 'default', weight: 1, promptTokens: 20, completionBound: 64 }, signal);
 * // ... the engine call ...
 * pass.done({ promptTokens: 20, completionTokens: 12 });
 */
export class FlowControl {
  private readonly models = new Map<string, ModelFlow>();
  private readonly tally = new FlowTally();
  private poller: NodeJS.Timeout | null = null;

  constructor(
    readonly settings: FlowSettings,
    private readonly room: RoomSource,
    private readonly events: FlowEvents = NO_EVENTS,
    private readonly peers: FlowPeers | null = null,
  ) {
    peers?.onGiven((modelId, replica) => {
      const flow = this.models.get(modelId);
      // A slot another gateway freed for this one's first waiting request: it goes at once, there.
      if (flow && flow.queue.size > 0) this.release(modelId, flow, replica ?? undefined);
    });
  }

  /**
   * A pass for the request: at once when its model has room and nobody waits before it, else once
   * it is its turn. Throws an overloaded `GatewayError` when it cannot wait (a bound reached) or
   * waited `maxWaitMs`; `left` (the client went away) takes it out of the queue and rejects with
   * its reason.
   */
  enter(request: FlowRequest, left?: { onLeave(leave: () => void): void }): FlowPass | Promise<FlowPass> {
    const flow = this.flowOf(request.modelId);
    const band = bandRank(request.band);
    if (band < BATCH) flow.betterBandAt = performance.now();
    flow.asked(request.orgId);
    // At once when it has room and only worse bands wait (none may go before it), or its own band's
    // while it is below its share (it would be served first).
    const next = flow.queue.nextBand();
    const ahead = flow.belowShare(request.orgId, request.weight, this.room.freeSlots(request.modelId));
    const first = next === undefined || next > band || (ahead && next === band);
    if (!this.settings.enabled || (first && this.free(request.modelId, flow, band, request) > 0)) {
      return this.dispatch(flow, request, 0);
    }
    this.refuseWhenFull(request);
    return new Promise<FlowPass>((resolve, reject) => {
      const waiter: Waiter = {
        orgId: request.orgId,
        band,
        request,
        enqueuedAt: performance.now(),
        resolve,
        reject,
        timer: setTimeout(() => this.giveUp(flow, waiter), this.settings.maxWaitMs),
      };
      waiter.timer.unref();
      flow.queue.push(waiter);
      this.tally.waited(request.orgId, 1);
      this.room.waitingInGateway?.(request.modelId, flow.queue.size);
      this.tellPeers(request.modelId, flow);
      left?.onLeave(() => {
        if (!this.takeOut(flow, waiter)) return;
        this.events.left(request);
        reject(new DOMException('the client closed the connection while its request waited', 'AbortError'));
      });
      this.startPolling();
    });
  }

  /**
   * Dispatches what fits on every model with waiting requests (the metrics may show room nobody
   * ended).
   */
  pump(): void {
    for (const [modelId, flow] of this.models) this.pumpModel(modelId, flow);
  }

  snapshot(): FlowSnapshot {
    const models = [...this.models].map(([model, flow]) => ({
      model,
      inFlight: flow.inFlight,
      freeSlots: this.room.freeSlots(model),
      waiting: flow.queue
        .waitingByBand()
        .flatMap((orgs, rank) => [...orgs].map(([orgId, requests]) => ({ band: BANDS[rank]!, orgId, requests }))),
    }));
    const served = [...this.tally.served].map(([orgId, tokens]) => ({ orgId, ...tokens }));
    return { models, served };
  }

  /** Requests waiting in all, and one organization's. */
  waiting(orgId?: string): number {
    return this.tally.waiting(orgId);
  }

  /** Refuses every waiting request (the gateway is stopping) and stops looking for room. */
  close(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = null;
    this.peers?.close();
    for (const flow of this.models.values()) {
      for (let waiter = flow.queue.pop(); waiter; waiter = flow.queue.pop()) {
        clearTimeout(waiter.timer);
        this.tally.waited(waiter.orgId, -1);
        waiter.reject(overloaded('The gateway is stopping. Retry on another replica.'));
      }
    }
  }

  private flowOf(modelId: string): ModelFlow {
    let flow = this.models.get(modelId);
    if (!flow) {
      flow = new ModelFlow();
      this.models.set(modelId, flow);
    }
    return flow;
  }

  /**
   * Room for a request of `band` (its rank; of `request`'s organization, when known): the engines'
   * free slots less this gateway's requests in flight (and slots lent to other gateways). On
   * engines that schedule by priority, worse bands' requests do not count (they yield), nor, for a
   * request below its organization's share, its band's sent at the band's own priority (it goes
   * ahead of them: `enginePriority`). Elsewhere a running request cannot yield: the batch band
   * leaves `batchHeadroom` free, and the organization that holds the most leaves `shareHeadroom`
   * free for another's next request.
   */
  private free(modelId: string, flow: ModelFlow, band: number, request?: FlowRequest): number {
    const slots = this.room.freeSlots(modelId);
    if (slots === null) return Infinity;
    const taken = flow.taken();
    if (!this.room.schedulesByPriority?.(modelId)) {
      return slots - taken - this.headroom(flow, band) - this.shareHeadroom(flow, request);
    }
    let yielding = 0;
    for (let worse = band + 1; worse < BANDS.length; worse++) yielding += flow.inFlightByBand[worse]!;
    if (request && flow.belowShare(request.orgId, request.weight, slots))
      yielding += flow.inFlightByBand[band]! - flow.aheadByBand[band]!;
    return slots - taken + yielding;
  }

  /**
   * Slots the batch band leaves free on engines that run a request to its end once started: while
   * better bands are about, so their next request need not wait for a batch request to end.
   */
  private headroom(flow: ModelFlow, band: number): number {
    const { batchHeadroom, batchHeadroomMs } = this.settings;
    if (band !== BATCH || performance.now() - flow.betterBandAt > batchHeadroomMs) return 0;
    return batchHeadroom;
  }

  /**
   * Slots the organization holding the most leaves free for others' next requests, on engines that
   * run a request to its end: `shareHeadroom`, never more than it already holds (its first requests
   * always go), only while another organization asked within `batchHeadroomMs` (else none).
   */
  private shareHeadroom(flow: ModelFlow, request: FlowRequest | undefined): number {
    const mixed = performance.now() - flow.mixedAt <= this.settings.batchHeadroomMs;
    if (!request || !mixed || !flow.leads(request.orgId, request.weight)) return 0;
    return Math.min(this.settings.shareHeadroom ?? 0, flow.inFlightByOrg.get(request.orgId) ?? 0);
  }

  private refuseWhenFull(request: FlowRequest): void {
    const { queuePerOrg, queueTotal } = this.settings;
    const own = this.tally.waiting(request.orgId);
    if (own < queuePerOrg && this.tally.waiting() < queueTotal) return;
    this.events.refused(request, 'queue_full');
    const which =
      own >= queuePerOrg
        ? `this organization already has ${own} requests waiting (TOLLGATE_FLOW_QUEUE_PER_ORG=${queuePerOrg})`
        : `${this.tally.waiting()} requests are waiting (TOLLGATE_FLOW_QUEUE_TOTAL=${queueTotal})`;
    throw overloaded(`The model's engines are saturated and ${which}. Retry after a moment.`);
  }

  private dispatch(flow: ModelFlow, request: FlowRequest, waitedMs: number, replica?: string): FlowPass {
    const band = bandRank(request.band);
    const ahead = flow.belowShare(request.orgId, request.weight, this.room.freeSlots(request.modelId));
    flow.started(band, request.orgId, request.weight, ahead);
    const expectedCompletion = Math.min(request.completionBound, flow.expected.of(request.orgId, request.band));
    const { inputWeight, outputWeight } = this.settings;
    const queue = flow.queue;
    queue.serve(
      request.orgId,
      band,
      (request.promptTokens * inputWeight + expectedCompletion * outputWeight) / request.weight,
    );
    this.events.dispatched(request, waitedMs);
    let ended = false;
    let ranOn: string | null = null;
    return {
      waitedMs,
      replica,
      priority: enginePriority(band, ahead),
      ranOn: (replicaId) => (ranOn = replicaId),
      done: (used) => {
        if (ended) return;
        ended = true;
        flow.ended(band, request.orgId, ahead);
        const correction =
          (used.promptTokens - request.promptTokens) * inputWeight +
          (used.completionTokens - expectedCompletion) * outputWeight;
        queue.serve(request.orgId, band, correction / request.weight);
        flow.expected.learn(request.orgId, request.band, used.completionTokens);
        this.tally.serve(request.orgId, used);
        this.events.served(request, used);
        // The slot it freed: another gateway's request may go first, else this one's waiting.
        if (!this.handOver(request.modelId, flow, ranOn) && queue.size > 0) this.pumpModel(request.modelId, flow);
      },
    };
  }

  private pumpModel(modelId: string, flow: ModelFlow): void {
    for (let band = flow.queue.nextBand(); band !== undefined; band = flow.queue.nextBand()) {
      if (this.free(modelId, flow, band, flow.queue.peek()!.request) <= 0) break;
      if (!this.handOver(modelId, flow, null)) this.release(modelId, flow);
    }
    if (flow.queue.size === 0) flow.queue.prune();
    this.tellPeers(modelId, flow);
  }

  /** Dispatches the model's first waiting request (to `replica`, a slot handed over there). */
  private release(modelId: string, flow: ModelFlow, replica?: string): void {
    const waiter = flow.queue.pop()!;
    this.tally.waited(waiter.orgId, -1);
    clearTimeout(waiter.timer);
    waiter.resolve(this.dispatch(flow, waiter.request, performance.now() - waiter.enqueuedAt, replica));
    this.room.waitingInGateway?.(modelId, flow.queue.size);
    this.tellPeers(modelId, flow);
  }

  /**
   * Gives a free slot to another gateway whose waiting request goes before this one's first (see
   * `FlowPeers`); false when none does, or there is no free slot.
   */
  private handOver(modelId: string, flow: ModelFlow, replica: string | null): boolean {
    if (!this.peers) return false;
    const head = flow.head();
    const to = this.peers.before(modelId, head, flow.inFlightByOrg);
    if (to === null || this.free(modelId, flow, head?.band ?? DEFAULT) <= 0) return false;
    this.peers.give(modelId, to, replica);
    flow.lend(this.peers.lendMs);
    return true;
  }

  private tellPeers(modelId: string, flow: ModelFlow): void {
    this.peers?.tell(modelId, flow.head(), flow.inFlightByOrg);
  }

  private giveUp(flow: ModelFlow, waiter: Waiter): void {
    if (!this.takeOut(flow, waiter)) return;
    this.events.refused(waiter.request, 'waited_too_long');
    waiter.reject(
      overloaded(
        `The model's engines stayed saturated for the longest a request waits (TOLLGATE_FLOW_MAX_WAIT_MS=${this.settings.maxWaitMs}). Retry after a moment.`,
      ),
    );
  }

  private takeOut(flow: ModelFlow, waiter: Waiter): boolean {
    if (!flow.queue.remove(waiter)) return false;
    clearTimeout(waiter.timer);
    this.tally.waited(waiter.orgId, -1);
    this.room.waitingInGateway?.(waiter.request.modelId, flow.queue.size);
    this.tellPeers(waiter.request.modelId, flow);
    return true;
  }

  private startPolling(): void {
    if (this.poller) return;
    this.poller = setInterval(() => {
      this.pump();
      if (this.tally.waiting() === 0 && this.poller) {
        clearInterval(this.poller);
        this.poller = null;
      }
    }, this.settings.pollMs);
    this.poller.unref();
  }
}
