import type { ChargeJournal } from '../billing/journal.js';
import type { ChargeRecord, WalletService } from '../billing/wallet.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { AuthenticatedKey } from '../keys/service.js';
import type { LimitGate, LiveRequest, Reported } from './gate.js';
import { currentMonth, monthStart } from './month.js';
import { admitRate, giveBackRate, type RatePass, type RateStepDeps } from './rate-step.js';
import {
  billingUnavailable,
  budgetExceeded,
  insufficientFunds,
  rebuilding,
  refusal,
  limitsUnavailableOnFailure,
} from './refusals.js';
import { type Budgets, budgetLimits, budgetTag, parseTag } from './budgets.js';
import { Rebuilds, type RebuildSources } from './rebuild.js';
import { type Ticket, ticketOf } from './ticket.js';

/** How often each replica tells the gate it is alive (and learns whether Redis lost its state). */
export const HEARTBEAT_MS = 1_000;

export type { Ticket } from './ticket.js';
export type { RatePass } from './rate-step.js';

/** `monthToDate` and `budgetSpend`: what a missing month's count and a missing budget's count are read from. */
export interface GateKeeperOptions extends Pick<RebuildSources, 'monthToDate' | 'budgetSpend'> {
  limitsEnabled: boolean;
  billingEnabled: boolean;
  /** The shorter of the hold and slot leases: what is running is renewed every third of it. */
  renewEveryMs: number;
  /** See `Config.rebuildGraceMs`. */
  rebuildGraceMs: number;
  /** A project's budgets (from the request-path cache); undefined: no such project. */
  projectBudgets(projectId: string): Promise<Budgets | undefined>;
}

/** What a request asks of `GateKeeper.admit`. */
export interface AdmissionAsk {
  requestId: string;
  caller: AuthenticatedKey;
  estimatedTokens: number;
  holdNanos: bigint | null;
  /** The first step's pass (`admitRate`); without it, this one step takes all four limits and the hold. */
  rate?: RatePass;
  /** The project the request is booked to, whose budgets it falls under; null: none. */
  projectId?: string | null;
  alone?: boolean; // no other billed call under way on this replica (`LimitGate`'s `alone`)
}

/**
 * Admits requests through the gate (`gate.ts`) and ends them, and keeps the gate whole: it rebuilds what the gate
 * lacks (a spendable amount, a budget's count, a month's tokens) from PostgreSQL (`rebuild.ts`), renews the holds
 * and slots of requests running here, and, when Redis comes back empty, reports them and the charges not yet in
 * PostgreSQL again (at once, before this replica rebuilds anything).
 *
 * @example
 * const ticket = await gateKeeper.admit({ requestId, caller, estimatedTokens: 600, holdNanos: 42_000n });
 * await gateKeeper.release(ticket, { actualTokens: 412, cost: 31_000n });
 */
export class GateKeeper {
  private readonly live = new Map<string, LiveRequest>();
  /** Releases the gate could not take (Redis down): tried again on every heartbeat. */
  private retries: Array<{ ticket: Ticket; tokenDelta: number; cost: bigint | null }> = [];
  private timer: NodeJS.Timeout | null = null;
  private lastRenewal = 0;
  /** The heartbeat under way: a rebuild's, or the timer's; one at a time. */
  private beating: Promise<void> | null = null;
  private readonly rateStep: RateStepDeps;
  private readonly rebuilds: Rebuilds;

  constructor(
    readonly gate: LimitGate,
    wallets: WalletService,
    private readonly journal: ChargeJournal,
    private readonly log: Logger,
    private readonly options: GateKeeperOptions,
  ) {
    this.rateStep = { gate, live: this.live, log, limitsEnabled: options.limitsEnabled };
    const { budgetSpend, monthToDate } = options;
    this.rebuilds = new Rebuilds({ gate, wallets, log, budgetSpend, monthToDate, reported: () => this.heartbeat() });
  }

  /**
   * Admits a request or throws its refusal: 402 `insufficient_funds`, 429 for
   * a limit, 503 when the gate cannot be reached or is rebuilding.
   */
  async admit(request: AdmissionAsk): Promise<Ticket> {
    const { caller } = request;
    const rate = request.rate?.requests && !request.rate.done ? request.rate : null;
    const month = currentMonth();
    const holdNanos = this.options.billingEnabled ? request.holdNanos : null;
    const projectId = request.projectId ?? null;
    const key = { id: caller.id, budgets: caller.budgets };
    // No await without a project: a project's budgets come from the request-path cache.
    const budgets =
      holdNanos === null
        ? []
        : projectId === null
          ? budgetLimits(key, null)
          : budgetLimits(key, await this.projectOf(projectId));
    const ask = {
      requestId: request.requestId,
      keyId: caller.id,
      orgId: caller.orgId,
      limits: this.options.limitsEnabled ? caller : null,
      estimatedTokens: request.estimatedTokens,
      holdNanos,
      month,
      rateTaken: rate !== null,
      budgets,
      alone: request.alone,
    };
    // A rebuild of the wallet and of each budget (four), one seed, and two again after another replica's late
    // report (`REPORT`): the last answer is final.
    for (let attempt = 0; attempt < 10; attempt++) {
      const admission = await limitsUnavailableOnFailure(() => this.gate.admit(ask));
      switch (admission.outcome) {
        case 'admitted': {
          if (rate) {
            rate.done = true;
            admission.requests = rate.requests!;
          }
          if (holdNanos !== null || ask.limits)
            this.live.set(request.requestId, {
              requestId: request.requestId,
              keyId: caller.id,
              orgId: caller.orgId,
              holdNanos,
              budgetTag: admission.budgetTag,
            });
          return ticketOf(ask, caller, admission);
        }
        case 'wallet_unknown':
          await limitsUnavailableOnFailure(() => this.rebuilds.wallet(caller.orgId));
          continue;
        case 'month_unknown':
          await limitsUnavailableOnFailure(() => this.rebuilds.month(caller, month, monthStart(month)));
          continue;
        case 'rebuilding':
          throw rebuilding(admission.retryMs);
        case 'budget_unknown':
          await limitsUnavailableOnFailure(() => this.rebuilds.budget(caller.orgId, budgets[admission.index]!));
          continue;
        case 'budget_exceeded':
          throw budgetExceeded(budgets[admission.index]!, admission.spent, holdNanos!, admission.limit);
        case 'insufficient_funds':
          throw insufficientFunds();
        default:
          if (rate) admission.requests = rate.requests!;
          throw refusal(admission, caller, request.estimatedTokens);
      }
    }
    throw billingUnavailable();
  }

  /** A project's budgets, for `budgetLimits`; null when it has none. */
  private async projectOf(projectId: string): Promise<{ id: string; budgets: Budgets } | null> {
    const budgets = await limitsUnavailableOnFailure(() => this.options.projectBudgets(projectId));
    return budgets ? { id: projectId, budgets } : null;
  }

  /** The first step, as soon as the key is known: its requests per minute and concurrency (`rate-step.ts`). */
  admitRate(request: { requestId: string; caller: AuthenticatedKey; alone?: boolean }): Promise<RatePass> {
    return admitRate(this.rateStep, request);
  }

  /** Gives back what `admitRate` took, unless `admit` took it over; once, and never throws. */
  giveBackRate(pass: RatePass): Promise<void> {
    return giveBackRate(this.rateStep, pass);
  }

  /**
   * Ends an admitted request: frees its slot, trues its token counts up to
   * `actualTokens`, and turns its hold into `cost` (null: nothing charged;
   * the charge must already be in the journal). Never throws: a gate that
   * cannot take it now gets it on a later heartbeat.
   */
  async release(ticket: Ticket, end: { actualTokens: number; cost: bigint | null; alone?: boolean }): Promise<void> {
    if (ticket.released) return;
    ticket.released = true;
    this.live.delete(ticket.requestId);
    const tokenDelta = end.actualTokens - ticket.estimatedTokens;
    const cost = this.options.billingEnabled ? end.cost : null;
    try {
      await this.releaseInGate(ticket, tokenDelta, cost, end.alone);
    } catch (error) {
      this.log.debug('release not taken by the gate: retried on the next heartbeat', {
        requestId: ticket.requestId,
        ...describeError(error),
      });
      this.retries.push({ ticket, tokenDelta, cost });
    }
  }

  /** A top-up or adjustment committed in PostgreSQL: make it spendable. */
  async credit(orgId: string, amount: bigint): Promise<void> {
    await this.gate.credit(orgId, amount).catch(async (error: unknown) => {
      // Not lost: the wallet is rebuilt from PostgreSQL (which holds the top-up) once the gate can be reached.
      this.log.warn('top-up not passed to the limits store: the wallet is rebuilt from the ledger when it is back', {
        orgId,
        ...describeError(error),
      });
      await this.gate.forgetWallet(orgId).catch(() => {});
    });
  }

  /** Charges now in PostgreSQL. */
  async written(charges: Array<{ id: string; orgId: string; cost: bigint }>): Promise<void> {
    await this.gate.written(charges.map((c) => ({ orgId: c.orgId, requestId: c.id, amount: c.cost })));
  }

  /**
   * At start-up: charges an earlier run of this replica journaled but never
   * reported to the gate (it died, or the gate was down) leave their
   * wallets' spendable amounts unknown: those wallets are rebuilt from
   * PostgreSQL, and the charges not yet written there are reported.
   */
  async recover(): Promise<void> {
    // A Redis first used (or just emptied): wait out the grace here, so clients do not see it as 503s.
    if (await this.gate.heartbeat([])) await new Promise((resolve) => setTimeout(resolve, this.options.rebuildGraceMs));
    const unreported = this.journal.unreportedCharges();
    const unwritten = this.journal.pending().map(reportedOf);
    if (unwritten.length > 0) await this.gate.report([], unwritten);
    for (const orgId of new Set(unreported.map((charge) => charge.orgId))) await this.gate.forgetWallet(orgId);
    // Their budgets' counts too (their holds expired, their charges were never counted): rebuilt when next asked.
    const counts = new Map<string, string>();
    for (const charge of unreported)
      for (const { counter } of parseTag(reportedOf(charge).tag!)) counts.set(counter, charge.orgId);
    for (const [counter, orgId] of counts) await this.gate.forgetBudget(orgId, counter);
    if (unreported.length > 0) await this.journal.markReported(unreported.map((charge) => charge.id));
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
        // Redis lost everything: what runs here and what is not yet in PostgreSQL is reported again, inside the rebuild grace.
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

/** A charge not yet written, reported again: tagged with the budget counts of its key and project at its time. */
function reportedOf(charge: ChargeRecord): Reported {
  const at = charge.createdAt instanceof Date ? charge.createdAt.getTime() : Date.now();
  const tag = budgetTag(charge.keyId, charge.projectId ?? null, [], at);
  return { orgId: charge.orgId, requestId: charge.id, amount: charge.cost, tag };
}
