import type { KeyLimits } from '../keys/service.js';
import type { BudgetLimit, BudgetScope, Budgets } from './budgets.js';
import type { BudgetState, LiveRequest, Reported, WalletState } from './gate-state.js';

/** What one request asks of the gate when it is admitted. */
export interface AdmitRequest {
  requestId: string;
  keyId: string;
  orgId: string;
  /** The key's four limits; null: limits are off (TOLLGATE_LIMITS=off). */
  limits: KeyLimits | null;
  /** Tokens taken from the token limits now, trued up when the request ends. */
  estimatedTokens: number;
  /** The wallet hold (nano-units); null: billing is off (TOLLGATE_BILLING=off). */
  holdNanos: bigint | null;
  /** The calendar month the request counts in, as `YYYY-MM` (UTC). */
  month: string;
  /**
   * Its request count and concurrency slot were taken already (`admitRate`): only the token limits
   * and the hold are left.
   */
  rateTaken: boolean;
  /**
   * The budget windows the request falls under (`budgetLimits`, in its tag's order), each with the
   * limit this replica knows; the gate reads one set since in its place (`setBudgets`), and the
   * hold must fit in every window that has a limit, with the wallet. Empty when billing is off.
   */
  budgets: BudgetLimit[];
  /**
   * No other billed call is under way on this replica: nothing could share its write to the gate
   * (`defineScript`).
   */
  alone?: boolean;
}

/**
 * What a request asks of its key's requests per minute and concurrency, before any work that grows
 * with it.
 */
export interface RateRequest {
  requestId: string;
  keyId: string;
  /** The key's organization: in Redis, every key of an admission is kept in its organization's slot. */
  orgId: string;
  limits: KeyLimits;
  /**
   * No other billed call is under way on this replica: nothing could share its write to the gate
   * (`defineScript`).
   */
  alone?: boolean;
}

/**
 * The gate's answer to the rate step (`admitRate`: requests per minute and concurrency only),
 * before the admission.
 */
export type RateAnswer =
  | {
      outcome: 'admitted';
      requests: Window;
      /** When the minute its count went into ends (gate clock, ms). */ windowEndsAt: number;
    }
  | { outcome: 'rate_limit_exceeded'; requests: Window }
  | { outcome: 'concurrency_limit_exceeded'; inFlight: number; requests: Window };

/** What `admitRate` took, given back when the request goes no further than that (`giveBackRate`). */
export interface RateTaken {
  requestId: string;
  keyId: string;
  orgId: string;
  /**
   * The count is given back only inside the minute it went into: after it, it would come out of the
   * next one's.
   */
  windowEndsAt: number;
}

/** A counting window as a response reports it. */
export interface Window {
  used: number;
  resetMs: number;
}

/**
 * An admission: the gate's one atomic step that checks and takes together a request's key limits,
 * its wallet's hold and its budgets (`LimitGate.admit`), and its answer. "Admission" names this
 * step only: the checks before it are `requests/authorize.ts`'s, the step before it the rate step
 * (`RateAnswer`).
 */
export type Admission =
  | {
      outcome: 'admitted';
      requests: Window;
      tokens: Window | null;
      tokensWindowEndsAt: number;
      /**
       * The budget counts its hold was taken from, and those only charged (`~`): its tag
       * (`heldTag`); '' with no hold.
       */
      budgetTag: string;
    }
  | { outcome: 'rate_limit_exceeded'; requests: Window }
  | { outcome: 'concurrency_limit_exceeded'; inFlight: number; requests: Window }
  | { outcome: 'tokens_limit_exceeded'; tokens: Window; requests: Window }
  | { outcome: 'monthly_quota_exceeded'; used: number; requests: Window }
  | { outcome: 'insufficient_funds' }
  /**
   * The hold does not fit in what is left of `budgets[index]` (its limit `limit`), which had
   * `spent` already.
   */
  | { outcome: 'budget_exceeded'; index: number; spent: bigint; limit: bigint }
  /**
   * The gate holds no count for `budgets[index]` yet: rebuild it from the usage records
   * (`rebuild.ts`) and ask again.
   */
  | { outcome: 'budget_unknown'; index: number }
  /**
   * The gate holds no spendable amount for this organization yet: rebuild it (`rebuildWallet`) and
   * ask again.
   */
  | { outcome: 'wallet_unknown' }
  /** The gate holds no count for this key's month yet: seed it from the usage records and ask again. */
  | { outcome: 'month_unknown' }
  /**
   * A Redis that came back empty: wallets are rebuilt once every replica has had time to report its
   * holds.
   */
  | { outcome: 'rebuilding'; retryMs: number };

/** How a request ended, for the gate. */
export interface Release {
  requestId: string;
  keyId: string;
  orgId: string;
  limits: KeyLimits | null;
  month: string;
  /** Tokens really used less the estimate taken at admission. */
  tokenDelta: number;
  /**
   * When the token window the estimate went into ends (gate clock, ms); a refund after it is not
   * made.
   */
  tokensWindowEndsAt: number;
  /** Whether the request held funds. */
  held: boolean;
  /** The charge (nano-units), already durable in the journal; null: nothing charged. */
  cost: bigint | null;
  /**
   * The budget tag it was admitted with (`budgetTag`): its charge's counts, should the gate have
   * lost its tag.
   */
  budgetTag?: string;
  /**
   * No other billed call is under way on this replica: nothing could share its write to the gate
   * (`defineScript`).
   */
  alone?: boolean;
}

/**
 * The one place a request's admission is decided: its key's four limits (requests per minute,
 * concurrency, tokens per minute, monthly tokens) and its organization's wallet (a hold on the
 * spendable amount). The billed path takes them in two steps: requests per minute and concurrency
 * first (`admitRate`, before any work that grows with the request), then the token limits and the
 * hold (`admit`); each step checks everything before it takes anything, and what the first took is
 * given back when the second refuses. In Redis (`redis-gate.ts`) each step is one script, one round
 * trip, shared by every replica; in the embedded default (`memory-gate.ts`) it is a function call.
 *
 * The spendable amount is the ledger's balance in PostgreSQL less the
 * charges not yet written there and less the holds of requests in flight.
 * It is built from PostgreSQL the first time an organization is seen
 * (`rebuildWallet`), then kept by the gate: a hold takes from it, a charge
 * gives back the hold less the cost, a top-up adds to it.
 */
export interface LimitGate {
  /**
   * The first step, as soon as the key is known: its requests per minute and concurrency, checked
   * and taken together (nothing taken when refused), so that work a request causes before its hold
   * (a stored chain read, a translation) is bounded by the key's limits as the request is.
   */
  admitRate(request: RateRequest): Promise<RateAnswer>;
  /**
   * Gives back what `admitRate` took (its slot, and its count inside its minute), for a request
   * refused before `admit` took it over.
   */
  giveBackRate(taken: RateTaken): Promise<void>;
  /**
   * The second step (or, with `rateTaken` false, both in one): the token limits and the wallet's
   * hold.
   */
  admit(request: AdmitRequest): Promise<Admission>;
  /**
   * Ends a request: frees its concurrency slot, trues up its tokens, and turns its hold into its
   * charge.
   */
  release(release: Release): Promise<void>;
  /**
   * Whether commands issued so far wait to be written (a `setImmediate` away, with the Redis gate's
   * auto-pipelining) rather than written when issued; absent where nothing is written (the memory
   * gate).
   */
  readonly writesQueued?: boolean;
  /** Seeds a key's monthly count (from the usage records) if it has none. */
  seedMonth(orgId: string, keyId: string, month: string, tokens: number): Promise<void>;
  walletState(orgId: string): Promise<WalletState>;
  /** The spendable amount the gate holds for an organization; null until it is rebuilt. */
  spendable(orgId: string): Promise<bigint | null>;
  /**
   * Sets an organization's spendable amount if it still has none and its state is still `version`;
   * false otherwise.
   */
  setWallet(orgId: string, spendable: bigint, version: string): Promise<boolean>;
  /** A top-up or an adjustment committed in PostgreSQL. */
  credit(orgId: string, amount: bigint): Promise<void>;
  /** Forgets an organization's spendable amount: the next request rebuilds it from PostgreSQL. */
  forgetWallet(orgId: string): Promise<void>;
  /** Charges now in PostgreSQL: a rebuild no longer needs to subtract them. */
  written(charges: Reported[]): Promise<void>;
  /**
   * Keeps the holds and slots of requests still running from expiring, and
   * gives back expired ones (of a replica that died). Returns true when the
   * gate lost its state since the last call (a Redis that restarted empty):
   * the caller then reports its holds and unwritten charges again (`report`).
   */
  heartbeat(live: LiveRequest[]): Promise<boolean>;
  report(holds: Reported[], unwritten: Reported[]): Promise<void>;
  /** The holds and unwritten charges of an organization tagged with a budget's count. */
  budgetState(orgId: string, counter: string): Promise<BudgetState>;
  /**
   * Sets a rebuilt count if it still has none and its state is still `version`, kept `ttlMs`; false
   * otherwise.
   */
  setBudgetSpent(orgId: string, counter: string, spent: bigint, version: string, ttlMs: number): Promise<boolean>;
  /** A budget count's spend (charges and holds); null when the gate has none. */
  budgetSpent(orgId: string, counter: string): Promise<bigint | null>;
  /** Forgets a budget count's spend: the next request under it rebuilds it from PostgreSQL. */
  forgetBudget(orgId: string, counter: string): Promise<void>;
  /**
   * A key's or a project's budgets (of organization `orgId`) as just set: every admission under
   * them reads these, in place of what its replica's request-path cache holds, for `ttlMs` (long
   * after every replica's cache has read the change).
   */
  setBudgets(orgId: string, scope: BudgetScope, subjectId: string, budgets: Budgets, ttlMs: number): Promise<void>;
}
