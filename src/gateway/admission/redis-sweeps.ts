import type { RedisClient } from '../../shared/db/redis.js';
import type { LiveRequest, Reported } from './gate-state.js';
import { type AwaitedReplies, defineScript, type GateKeys, holdMember, type Script } from './redis-keys.js';
import { REPORT, SWEEP } from './redis-sweep-scripts.js';

/**
 * The Redis gate's heartbeat work and its report, organization by organization: each organization's
 * keys are in one slot of a Redis Cluster (`gateKeys`), and one script touches one slot only. The
 * organizations whose expired holds a heartbeat gives back are those with requests running on this
 * replica, and every few seconds those of `hold-orgs`: every organization a hold was taken for
 * (each replica adds one the first time it holds for it), so the holds of a replica that died are
 * given back by another.
 */
export class HoldSweeps {
  private readonly sweepScript: Script;
  private readonly reportScript: Script;
  /** Organizations this replica has added to `hold-orgs` since the gate's state began. */
  private readonly registered = new Set<string>();
  /** When the organizations of `hold-orgs` were last swept (Date.now()). */
  private lastFullSweep = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly key: GateKeys,
    private readonly options: { holdLeaseMs: number; concurrencyLeaseMs: number },
    awaited: AwaitedReplies,
  ) {
    this.sweepScript = defineScript(redis, SWEEP, awaited);
    this.reportScript = defineScript(redis, REPORT, awaited);
  }

  /**
   * Adds an organization to `hold-orgs` once; sent before its hold's admission on the same
   * connection.
   */
  register(orgId: string): void {
    if (this.registered.has(orgId)) return;
    this.registered.add(orgId);
    this.redis.sadd(this.key.holdOrgs, orgId).catch(() => this.registered.delete(orgId));
  }

  /** The gate lost its state (and `hold-orgs` with it): organizations are added again as they hold. */
  forgetRegistered(): void {
    this.registered.clear();
    this.lastFullSweep = 0;
  }

  /** Renews the holds and slots of `live`, and gives back expired holds. */
  async sweep(live: LiveRequest[]): Promise<void> {
    const byOrg = new Map<string, { holds: string[]; slots: string[] }>();
    const of = (orgId: string) => {
      let entry = byOrg.get(orgId);
      if (!entry) byOrg.set(orgId, (entry = { holds: [], slots: [] }));
      return entry;
    };
    for (const request of live) {
      const entry = of(request.orgId);
      if (request.holdNanos !== null) entry.holds.push(holdMember(request.orgId, request.requestId));
      entry.slots.push(request.keyId, request.requestId);
    }
    // Expired holds are given back within a quarter of their lease of expiring: no need to look
    // every second.
    if (Date.now() - this.lastFullSweep >= this.options.holdLeaseMs / 4) {
      for (const orgId of await this.redis.smembers(this.key.holdOrgs)) of(orgId);
      this.lastFullSweep = Date.now();
    }
    const { holdLeaseMs, concurrencyLeaseMs } = this.options;
    await Promise.all(
      [...byOrg].map(([orgId, { holds, slots }]) =>
        this.sweepScript(
          ...SWEEP.argv(
            { holdExpiry: this.key.holdExpiry(orgId) },
            { orgPrefix: this.key.org(orgId), holdLeaseMs, slotLeaseMs: concurrencyLeaseMs, holds: holds.length },
            [...holds, ...slots],
          ),
        ),
      ),
    );
  }

  /** Reports again holds and unwritten charges, to a Redis that lost them (`REPORT`). */
  async report(holds: Reported[], unwritten: Reported[]): Promise<void> {
    const byOrg = new Map<string, { holds: Reported[]; unwritten: Reported[] }>();
    const of = (orgId: string) => {
      let entry = byOrg.get(orgId);
      if (!entry) byOrg.set(orgId, (entry = { holds: [], unwritten: [] }));
      return entry;
    };
    for (const hold of holds) of(hold.orgId).holds.push(hold);
    for (const charge of unwritten) of(charge.orgId).unwritten.push(charge);
    const triples = (items: Reported[]) => items.flatMap((i) => [i.requestId, i.amount.toString(), i.tag ?? '']);
    await Promise.all(
      [...byOrg].map(([orgId, reported]) => {
        if (reported.holds.length > 0) this.register(orgId);
        const args = {
          orgPrefix: this.key.org(orgId),
          holdLeaseMs: this.options.holdLeaseMs,
          holds: reported.holds.length,
          orgId,
        };
        const rest = [...triples(reported.holds), ...triples(reported.unwritten)];
        return this.reportScript(...REPORT.argv({ holdExpiry: this.key.holdExpiry(orgId) }, args, rest));
      }),
    );
  }
}
