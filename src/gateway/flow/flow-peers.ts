import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/types.js';
import { isCluster, type RedisClient } from '../../shared/db/redis.js';
import type { Logger } from '../../shared/http/log.js';
import type { FlowPeers, WaitingHead } from './flow-types.js';

/** What another gateway last said of a model: its first waiting request, its in-flight by org. */
interface PeerView {
  head: WaitingHead;
  inFlight: Record<string, number>;
  at: number;
}

type Message =
  | { from: string; kind: 'state'; model: string; head: WaitingHead | null; inFlight: Record<string, number> }
  | { from: string; kind: 'give'; model: string; to: string; replica: string | null };

/**
 * The peers of a gateway's flow control: over its Redis, unless TOLLGATE_FLOW_PEERS is off. A slot
 * handed over counts as taken here for two scrapes, by when the engines' figures show it taken.
 */
export function flowPeers(redis: RedisClient | null, config: Config, log: Logger): FlowPeers | null {
  if (!redis || !config.flow.peers) return null;
  return new RedisFlowPeers(redis, config.limits.redisPrefix, 2 * config.routing.scrapeMs, log);
}

/** A model's state is told at most this often while it changes, and again this often while it waits. */
const TELL_MS = 20;
const REPEAT_MS = 200;
/** A gateway not heard of for this long has nothing waiting (it stopped, or lost Redis). */
const FORGET_MS = 1_000;
/** Models whose peers are remembered: more are forgotten oldest first. */
const MODELS_KEPT = 1_000;

/**
 * Flow control's peers over Redis pub/sub: one channel under the limits' key prefix, on which each
 * gateway replica says, per model it has requests waiting for, its first waiting request and its
 * requests in flight of the organizations waiting anywhere, and hands slots it freed to another.
 * Nothing is stored: a gateway that stops is forgotten within `FORGET_MS`, and a message lost
 * (Redis down) costs a slot's handover, never a request.
 *
 * @example
 * const peers = new RedisFlowPeers(redis, 'tollgate:', 500, log);
 * const flow = new FlowControl(config.flow, fleet, events, peers);
 */
export class RedisFlowPeers implements FlowPeers {
  readonly id = randomUUID();
  private readonly views = new Map<string, Map<string, PeerView>>();
  /** Per model with requests waiting here, what was last told of it. */
  private readonly told = new Map<string, { head: WaitingHead; inFlight: Record<string, number> }>();
  private readonly due = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly repeat: NodeJS.Timeout;
  private given: (modelId: string, replica: string | null) => void = () => {};

  private readonly subscriber: RedisClient;
  private readonly channel: string;

  /** Subscribes a connection of its own (a subscribed connection sends nothing else). */
  constructor(
    private readonly publisher: RedisClient,
    prefix: string,
    readonly lendMs: number,
    private readonly log: Logger,
  ) {
    this.channel = `${prefix}flow:peers`;
    this.subscriber = isCluster(publisher) ? publisher.duplicate() : publisher.duplicate();
    this.subscriber.on('error', () => {}); // The shared connection logs Redis being down.
    this.subscriber.on('message', (_channel: string, text: string) => this.heard(text));
    // Once connected: the gateway's connections send nothing while not (no offline queue), and
    // ioredis subscribes again by itself after a reconnect.
    this.subscriber.once('ready', () => {
      this.subscriber.subscribe(this.channel).catch((error: Error) => {
        log.warn('flow peers: not subscribed; slots are not handed between gateways', { detail: error.message });
      });
    });
    this.repeat = setInterval(() => {
      for (const model of this.told.keys()) this.due.add(model);
      this.flush();
    }, REPEAT_MS);
    this.repeat.unref();
  }

  tell(modelId: string, head: WaitingHead | null, inFlightByOrg: ReadonlyMap<string, number>): void {
    if (!head) {
      // Said once when its queue empties; nothing while nothing waits (the unsaturated path).
      if (!this.told.delete(modelId)) return;
      this.due.delete(modelId);
      return this.send({ from: this.id, kind: 'state', model: modelId, head: null, inFlight: {} });
    }
    // Only the organizations some gateway has waiting are ranked: their counts are what peers need.
    const inFlight: Record<string, number> = {};
    for (const orgId of [head.orgId, ...this.headsOf(modelId)]) inFlight[orgId] = inFlightByOrg.get(orgId) ?? 0;
    this.told.set(modelId, { head, inFlight });
    this.due.add(modelId);
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flush(), TELL_MS);
    this.flushTimer.unref();
  }

  before(modelId: string, head: WaitingHead | null, inFlightByOrg: ReadonlyMap<string, number>): string | null {
    const views = this.freshViews(modelId);
    if (views.length === 0) return null;
    const inFlight = (orgId: string) =>
      (inFlightByOrg.get(orgId) ?? 0) + views.reduce((sum, [, view]) => sum + (view.inFlight[orgId] ?? 0), 0);
    const rank = (h: WaitingHead) => h.band * 1e9 + inFlight(h.orgId);
    let best: { gateway: string; rank: number } | null = null;
    for (const [gateway, view] of views) {
      const r = rank(view.head);
      if (!best || r < best.rank) best = { gateway, rank: r };
    }
    return best && (!head || best.rank < rank(head)) ? best.gateway : null;
  }

  give(modelId: string, to: string, replica: string | null): void {
    this.send({ from: this.id, kind: 'give', model: modelId, to, replica });
    // Taken: the slot is that gateway's now, and its head is no longer waiting for it.
    this.views.get(modelId)?.delete(to);
  }

  onGiven(handler: (modelId: string, replica: string | null) => void): void {
    this.given = handler;
  }

  close(): void {
    clearInterval(this.repeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const model of this.told.keys()) this.tell(model, null, new Map());
    this.subscriber.disconnect();
  }

  private flush(): void {
    this.flushTimer = null;
    for (const model of this.due) {
      const state = this.told.get(model);
      if (state) this.send({ from: this.id, kind: 'state', model, ...state });
    }
    this.due.clear();
  }

  private send(message: Message): void {
    this.publisher.publish(this.channel, JSON.stringify(message)).catch((error: Error) => {
      this.log.debug('flow peers: a message was not sent', { detail: error.message });
    });
  }

  private heard(text: string): void {
    const message = parsed(text);
    if (!message || message.from === this.id) return;
    if (message.kind === 'give') {
      if (message.to === this.id) this.given(message.model, message.replica);
      return;
    }
    let views = this.views.get(message.model);
    if (!views) {
      if (this.views.size >= MODELS_KEPT) this.views.delete(this.views.keys().next().value!);
      views = new Map();
      this.views.set(message.model, views);
    }
    if (message.head) views.set(message.from, { head: message.head, inFlight: message.inFlight, at: Date.now() });
    else views.delete(message.from);
  }

  private freshViews(modelId: string): Array<[string, PeerView]> {
    const views = this.views.get(modelId);
    if (!views) return [];
    const now = Date.now();
    for (const [gateway, view] of views) if (now - view.at > FORGET_MS) views.delete(gateway);
    return [...views];
  }

  private headsOf(modelId: string): string[] {
    return this.freshViews(modelId).map(([, view]) => view.head.orgId);
  }
}

/** A message of another gateway, or null for anything else on the channel. */
function parsed(text: string): Message | null {
  try {
    const message = JSON.parse(text) as Message;
    if (typeof message?.from !== 'string' || typeof message.model !== 'string') return null;
    if (message.kind === 'give') {
      const replica = message.replica;
      return typeof message.to === 'string' && (replica === null || typeof replica === 'string') ? message : null;
    }
    if (message.kind !== 'state' || typeof message.inFlight !== 'object' || !message.inFlight) return null;
    const head = message.head;
    if (head !== null && (typeof head?.band !== 'number' || typeof head.orgId !== 'string')) return null;
    return message;
  } catch {
    return null;
  }
}
