import { BANDS, bandRank } from './bands.js';
import { FairQueue, type Queued } from './fair-queue.js';
import { overloaded } from './refusals.js';
import type { FlowSettings } from '../../config/fleet-types.js';
import type { FlowEvents, FlowPass, FlowRequest, FlowSnapshot, RoomSource } from './flow-types.js';

interface Waiter extends Queued {
  request: FlowRequest;
  enqueuedAt: number;
  resolve(pass: FlowPass): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
}

interface ModelFlow {
  queue: FairQueue<Waiter>;
  /** Requests this gateway dispatched to the model that have not ended, in all and by band. */
  inFlight: number;
  inFlightByBand: number[];
  /**
   * Completion tokens an organization's requests generated lately, per band: what the next is
   * expected to.
   */
  expected: Map<string, number>;
  /** When a request of a better band than `batch` last asked for the model (performance.now()). */
  betterBandAt: number;
}

const BATCH = bandRank('batch');

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
  private readonly waitingPerOrg = new Map<string, number>();
  private waitingTotal = 0;
  private readonly servedTokens = new Map<string, { promptTokens: number; completionTokens: number }>();
  private poller: NodeJS.Timeout | null = null;

  constructor(
    readonly settings: FlowSettings,
    private readonly room: RoomSource,
    private readonly events: FlowEvents = NO_EVENTS,
  ) {}

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
    // At once when it has room and only worse bands wait (none may go before it).
    const next = flow.queue.nextBand();
    if (!this.settings.enabled || ((next === undefined || next > band) && this.free(request.modelId, flow, band) > 0)) {
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
      this.counted(request.orgId, 1);
      this.room.waitingInGateway?.(request.modelId, flow.queue.size);
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
    const served = [...this.servedTokens].map(([orgId, tokens]) => ({ orgId, ...tokens }));
    return { models, served };
  }

  /** Requests waiting in all, and one organization's. */
  waiting(orgId?: string): number {
    return orgId === undefined ? this.waitingTotal : (this.waitingPerOrg.get(orgId) ?? 0);
  }

  /** Refuses every waiting request (the gateway is stopping) and stops looking for room. */
  close(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = null;
    for (const flow of this.models.values()) {
      for (let waiter = flow.queue.pop(); waiter; waiter = flow.queue.pop()) {
        clearTimeout(waiter.timer);
        this.counted(waiter.orgId, -1);
        waiter.reject(overloaded('The gateway is stopping. Retry on another replica.'));
      }
    }
  }

  private flowOf(modelId: string): ModelFlow {
    let flow = this.models.get(modelId);
    if (!flow) {
      const inFlightByBand = BANDS.map(() => 0);
      flow = {
        queue: new FairQueue<Waiter>(),
        inFlight: 0,
        inFlightByBand,
        expected: new Map(),
        betterBandAt: -Infinity,
      };
      this.models.set(modelId, flow);
    }
    return flow;
  }

  /**
   * Room for a request of `band` (its rank): the engines' free slots less this gateway's requests
   * in flight, of which worse bands' do not count on engines that schedule by priority (they
   * yield).
   */
  private free(modelId: string, flow: ModelFlow, band: number): number {
    const slots = this.room.freeSlots(modelId);
    if (slots === null) return Infinity;
    if (!this.room.schedulesByPriority?.(modelId)) return slots - flow.inFlight - this.headroom(flow, band);
    let yielding = 0;
    for (let worse = band + 1; worse < BANDS.length; worse++) yielding += flow.inFlightByBand[worse]!;
    return slots - flow.inFlight + yielding;
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

  private refuseWhenFull(request: FlowRequest): void {
    const { queuePerOrg, queueTotal } = this.settings;
    const own = this.waitingPerOrg.get(request.orgId) ?? 0;
    if (own < queuePerOrg && this.waitingTotal < queueTotal) return;
    this.events.refused(request, 'queue_full');
    const which =
      own >= queuePerOrg
        ? `this organization already has ${own} requests waiting (TOLLGATE_FLOW_QUEUE_PER_ORG=${queuePerOrg})`
        : `${this.waitingTotal} requests are waiting (TOLLGATE_FLOW_QUEUE_TOTAL=${queueTotal})`;
    throw overloaded(`The model's engines are saturated and ${which}. Retry after a moment.`);
  }

  private dispatch(flow: ModelFlow, request: FlowRequest, waitedMs: number): FlowPass {
    const band = bandRank(request.band);
    flow.inFlight++;
    flow.inFlightByBand[band]!++;
    const expectedCompletion = Math.min(request.completionBound, this.expectedOf(flow, request));
    const { inputWeight, outputWeight } = this.settings;
    const queue = flow.queue;
    queue.serve(
      request.orgId,
      band,
      (request.promptTokens * inputWeight + expectedCompletion * outputWeight) / request.weight,
    );
    this.events.dispatched(request, waitedMs);
    let ended = false;
    return {
      waitedMs,
      done: (used) => {
        if (ended) return;
        ended = true;
        flow.inFlight--;
        flow.inFlightByBand[band]!--;
        const correction =
          (used.promptTokens - request.promptTokens) * inputWeight +
          (used.completionTokens - expectedCompletion) * outputWeight;
        queue.serve(request.orgId, band, correction / request.weight);
        this.learn(flow, request, used.completionTokens);
        this.count(request.orgId, used);
        this.events.served(request, used);
        if (queue.size > 0) this.pumpModel(request.modelId, flow);
      },
    };
  }

  private pumpModel(modelId: string, flow: ModelFlow): void {
    for (let band = flow.queue.nextBand(); band !== undefined; band = flow.queue.nextBand()) {
      if (this.free(modelId, flow, band) <= 0) break;
      const waiter = flow.queue.pop()!;
      this.counted(waiter.orgId, -1);
      clearTimeout(waiter.timer);
      waiter.resolve(this.dispatch(flow, waiter.request, performance.now() - waiter.enqueuedAt));
      this.room.waitingInGateway?.(modelId, flow.queue.size);
    }
    if (flow.queue.size === 0) flow.queue.prune();
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
    this.counted(waiter.orgId, -1);
    this.room.waitingInGateway?.(waiter.request.modelId, flow.queue.size);
    return true;
  }

  private counted(orgId: string, change: number): void {
    this.waitingTotal += change;
    const now = (this.waitingPerOrg.get(orgId) ?? 0) + change;
    if (now <= 0) this.waitingPerOrg.delete(orgId);
    else this.waitingPerOrg.set(orgId, now);
  }

  /**
   * What an organization's next request in a band is expected to generate: the average of its last
   * ones.
   */
  private expectedOf(flow: ModelFlow, request: FlowRequest): number {
    return flow.expected.get(`${request.orgId} ${request.band}`) ?? 0;
  }

  private learn(flow: ModelFlow, request: FlowRequest, completionTokens: number): void {
    const key = `${request.orgId} ${request.band}`;
    const before = flow.expected.get(key);
    // A moving average over about the last eight requests; bounded by the organizations active
    // lately.
    flow.expected.set(key, before === undefined ? completionTokens : before + (completionTokens - before) / 8);
    if (flow.expected.size > 10_000) flow.expected.delete(flow.expected.keys().next().value!);
  }

  private count(orgId: string, used: { promptTokens: number; completionTokens: number }): void {
    const total = this.servedTokens.get(orgId) ?? { promptTokens: 0, completionTokens: 0 };
    total.promptTokens += used.promptTokens;
    total.completionTokens += used.completionTokens;
    this.servedTokens.set(orgId, total);
    if (this.servedTokens.size > 10_000) this.servedTokens.delete(this.servedTokens.keys().next().value!);
  }

  private startPolling(): void {
    if (this.poller) return;
    this.poller = setInterval(() => {
      this.pump();
      if (this.waitingTotal === 0 && this.poller) {
        clearInterval(this.poller);
        this.poller = null;
      }
    }, this.settings.pollMs);
    this.poller.unref();
  }
}
