import type { ChargeJournal } from '../billing/journal.js';
import type { ChargeRecord } from '../billing/charge-writes.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import { budgetTag, parseTag } from './budgets.js';
import type { LimitGate } from './gate.js';
import type { LiveRequest, Reported } from './gate-state.js';
import type { Ticket } from './ticket.js';

/** How often each replica tells the gate it is alive (and learns whether Redis lost its state). */
export const HEARTBEAT_MS = 1_000;

/**
 * What keeps the gate whole for a `GateKeeper` (`gate-keeper.ts`): requests' ends passed to the
 * gate, and tried again while it cannot take them; the heartbeat, which renews the holds and slots
 * of requests running here and, when Redis comes back empty, reports them and the charges not yet
 * in PostgreSQL again; and the recovery at start-up of what an earlier run of this replica left
 * unreported.
 */
export class GateUpkeep {
  /** Releases the gate could not take (Redis down): tried again on every heartbeat. */
  private retries: Array<{ ticket: Ticket; tokenDelta: number; cost: bigint | null }> = [];
  private timer: NodeJS.Timeout | null = null;
  private lastRenewal = 0;
  /** The heartbeat under way: a rebuild's, or the timer's; one at a time. */
  private beating: Promise<void> | null = null;

  constructor(
    private readonly gate: LimitGate,
    private readonly journal: ChargeJournal,
    private readonly log: Logger,
    private readonly options: { limitsEnabled: boolean; renewEveryMs: number; rebuildGraceMs: number },
    /** The requests admitted on this replica and not yet ended (the `GateKeeper`'s). */
    private readonly live: Map<string, LiveRequest>,
  ) {}

  /**
   * At start-up: charges an earlier run of this replica journaled but never
   * reported to the gate (it died, or the gate was down) leave their
   * wallets' spendable amounts unknown: those wallets are rebuilt from
   * PostgreSQL, and the charges not yet written there are reported.
   */
  async recover(): Promise<void> {
    // A Redis first used (or just emptied): wait out the grace here, so clients do not see it as
    // 503s.
    if (await this.gate.heartbeat([])) await new Promise((resolve) => setTimeout(resolve, this.options.rebuildGraceMs));
    const unreported = this.journal.unreportedCharges();
    const unwritten = this.journal.pending().map(reportedOf);
    if (unwritten.length > 0) await this.gate.report([], unwritten);
    for (const orgId of new Set(unreported.map((charge) => charge.orgId))) await this.gate.forgetWallet(orgId);
    // Their budgets' counts too (their holds expired, their charges were never counted): rebuilt
    // when next asked.
    const counts = new Map<string, string>();
    for (const charge of unreported)
      for (const { counter } of parseTag(reportedOf(charge).tag!)) counts.set(counter, charge.orgId);
    for (const [counter, orgId] of counts) await this.gate.forgetBudget(orgId, counter);
    if (unreported.length > 0) await this.journal.markReported(unreported.map((charge) => charge.id));
  }

  /**
   * Passes a request's end to the gate; one the gate cannot take now is tried again on each
   * heartbeat.
   */
  async release(ticket: Ticket, tokenDelta: number, cost: bigint | null, alone?: boolean): Promise<void> {
    try {
      await this.releaseInGate(ticket, tokenDelta, cost, alone);
    } catch (error) {
      this.log.debug('release not taken by the gate: retried on the next heartbeat', {
        requestId: ticket.requestId,
        ...describeError(error),
      });
      this.retries.push({ ticket, tokenDelta, cost });
    }
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One heartbeat, or the one under way; exposed for tests. */
  heartbeat(): Promise<void> {
    return (this.beating ??= this.beat().finally(() => (this.beating = null)));
  }

  private async beat(): Promise<void> {
    try {
      const renew = Date.now() - this.lastRenewal >= this.options.renewEveryMs / 3;
      const fresh = await this.gate.heartbeat(renew ? [...this.live.values()] : []);
      if (renew) this.lastRenewal = Date.now();
      if (fresh) {
        // Redis lost everything: what runs here and what is not yet in PostgreSQL is reported
        // again, inside the rebuild grace.
        const holds = [...this.live.values()]
          .filter((r) => r.holdNanos !== null)
          .map((r) => ({ orgId: r.orgId, requestId: r.requestId, amount: r.holdNanos!, tag: r.budgetTag }));
        await this.gate.report(holds, this.journal.pending().map(reportedOf));
        this.log.warn('limits store lost its state: holds and unwritten charges reported again', {
          holds: holds.length,
        });
        const dropped = this.retries.splice(0);
        await this.journal.markReported(dropped.filter((r) => r.cost !== null).map((r) => r.ticket.requestId));
        return;
      }
      for (const retry of this.retries.splice(0)) {
        await this.releaseInGate(retry.ticket, retry.tokenDelta, retry.cost).catch(() => this.retries.push(retry));
      }
    } catch (error) {
      this.log.debug('heartbeat failed', describeError(error));
    }
  }

  private async releaseInGate(ticket: Ticket, tokenDelta: number, cost: bigint | null, alone = false): Promise<void> {
    const { caller } = ticket;
    await this.gate.release({
      requestId: ticket.requestId,
      keyId: caller.id,
      orgId: caller.orgId,
      limits: this.options.limitsEnabled ? caller : null,
      month: ticket.month,
      tokenDelta,
      tokensWindowEndsAt: ticket.tokensWindowEndsAt,
      held: ticket.holdNanos !== null,
      cost,
      budgetTag: ticket.budgetTag,
      alone,
    });
    if (cost !== null) await this.journal.markReported([ticket.requestId]);
  }
}

/**
 * A charge not yet written, reported again: tagged with the budget counts of its key and project at
 * its time.
 */
function reportedOf(charge: ChargeRecord): Reported {
  const at = charge.createdAt instanceof Date ? charge.createdAt.getTime() : Date.now();
  const tag = budgetTag(charge.keyId, charge.projectId ?? null, [], at);
  return { orgId: charge.orgId, requestId: charge.id, amount: charge.cost, tag };
}
