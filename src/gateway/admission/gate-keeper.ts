import type { ChargeJournal } from '../billing/journal.js';
import type { WalletService } from '../billing/wallet.js';
import type { Logger } from '../../shared/http/log.js';
import type { AuthenticatedKey } from '../keys/service.js';
import type { AdmissionAsk, GateKeeperOptions } from './admission-ask.js';
import { type LeftBehindCharge, passCredit, passLeftBehind } from './books-to-gate.js';
import type { LimitGate } from './gate.js';
import type { LiveRequest } from './gate-state.js';
import { Calendar, monthStart } from './month.js';
import { admitRate, giveBackRate, type RatePass, type RateStepDeps } from './rate-step.js';
import {
  billingUnavailable,
  budgetExceeded,
  insufficientFunds,
  rebuilding,
  refusal,
  limitsUnavailableOnFailure,
} from './refusals.js';
import { type Budgets, budgetLimits } from './budgets.js';
import { GateUpkeep } from './gate-upkeep.js';
import { Rebuilds } from './rebuild.js';
import { type Ticket, ticketOf } from './ticket.js';

export type { Ticket } from './ticket.js';
export type { RatePass } from './rate-step.js';

/**
 * Admits requests through the gate (`gate.ts`) and ends them, and keeps the gate whole: it rebuilds
 * what the gate lacks (a spendable amount, a budget's count, a month's tokens) from PostgreSQL
 * (`rebuild.ts`); its upkeep (`gate-upkeep.ts`) renews the holds and slots of requests running
 * here, and, when Redis comes back empty, reports them and the charges not yet in PostgreSQL again
 * (at once, before this replica rebuilds anything).
 *
 * @example
 * const ticket = await gateKeeper.admit({ requestId, caller, estimatedTokens: 600, holdNanos: 42_000n });
 * await gateKeeper.release(ticket, { actualTokens: 412, cost: 31_000n });
 */
export class GateKeeper {
  /** The requests admitted here and not yet ended, renewed by each heartbeat. */
  private readonly live = new Map<string, LiveRequest>();
  private readonly rateStep: RateStepDeps;
  private readonly rebuilds: Rebuilds;
  /** Releases, heartbeats and recovery (`gate-upkeep.ts`). */
  private readonly upkeep: GateUpkeep;
  /**
   * The month and the day requests count in now, kept until the clock passes their end
   * (`month.ts`).
   */
  private readonly calendar = new Calendar();

  constructor(
    readonly gate: LimitGate,
    wallets: WalletService,
    journal: ChargeJournal,
    private readonly log: Logger,
    private readonly options: GateKeeperOptions,
  ) {
    this.rateStep = { gate, live: this.live, log, limitsEnabled: options.limitsEnabled };
    this.upkeep = new GateUpkeep(gate, journal, log, options, this.live);
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
    // One reading of the clock: a request at midnight falls in one day and in that day's month.
    const now = Date.now();
    const monthWindow = this.calendar.monthOf(now);
    const month = monthWindow.name;
    const holdNanos = this.options.billingEnabled ? request.holdNanos : null;
    const projectId = request.projectId ?? null;
    const key = { id: caller.id, budgets: caller.budgets };
    // No await without a project: a project's budgets come from the request-path cache.
    const budgets =
      holdNanos === null
        ? []
        : projectId === null
          ? budgetLimits(key, null, monthWindow, this.calendar.dayOf(now))
          : budgetLimits(key, await this.projectOf(projectId), monthWindow, this.calendar.dayOf(now));
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
    // A rebuild of the wallet and of each budget (four), one seed, and two again after another
    // replica's late report (`REPORT`): the last answer is final.
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

  /**
   * The first step, as soon as the key is known: its requests per minute and concurrency
   * (`rate-step.ts`).
   */
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
    await this.upkeep.release(ticket, tokenDelta, cost, end.alone);
  }

  /**
   * The charge of a request another replica admitted and died running, already in the journal
   * (`passLeftBehind`). Never throws.
   */
  chargeLeftBehind(charge: LeftBehindCharge): Promise<void> {
    return passLeftBehind(this.gate, this.log, this.options.billingEnabled, charge);
  }

  /** A top-up or adjustment committed in PostgreSQL: made spendable (`passCredit`). Never throws. */
  credit(orgId: string, amount: bigint): Promise<void> {
    return passCredit(this.gate, this.log, orgId, amount);
  }

  /** Charges now in PostgreSQL. */
  async written(charges: Array<{ id: string; orgId: string; cost: bigint }>): Promise<void> {
    await this.gate.written(charges.map((c) => ({ orgId: c.orgId, requestId: c.id, amount: c.cost })));
  }

  /**
   * At start-up: what an earlier run of this replica left unreported is reported
   * (`GateUpkeep.recover`).
   */
  recover(): Promise<void> {
    return this.upkeep.recover();
  }

  start(): void {
    this.upkeep.start();
  }

  stop(): void {
    this.upkeep.stop();
  }

  /** One heartbeat, or the one under way; exposed for tests. */
  heartbeat(): Promise<void> {
    return this.upkeep.heartbeat();
  }
}
