import { type Charge, chargeFor } from '../billing/holds.js';
import { NO_CHECKPOINTS, StreamCheckpoints } from '../billing/stream-checkpoints.js';
import { cacheKey, type CachedResponse } from '../cache/response-cache.js';
import { describeError } from '../../shared/http/log.js';
import { type Settlement, type StreamState, streamSettlement } from '../billing/settlement.js';
import type { TokenUsage } from '../billing/token-usage.js';
import type { BilledDeps } from './endpoint.js';
import type { AuthorizedRequest, BilledCall } from './authorize.js';
import { usageRecord } from './usage-record.js';

export type { BilledCall } from './authorize.js';

export type { Settlement } from '../billing/settlement.js';

/**
 * Ends a call: makes its charge (exact cost and usage record) durable in the
 * journal, and sends the gate the release that turns its hold into that
 * charge and settles its limits to the tokens really used
 * (`GateKeeper.release`, `admission/gate-keeper.ts`), both before the
 * response's last byte; keeps its answer in the cache when the key asks for
 * it. The charge reaches PostgreSQL shortly after, by group commit
 * (`billing/charge-applier.ts`): the answer never waits for the database,
 * nor for the gate's reply to the release. The call counts as in flight
 * (`finish`) until that reply. Never throws: the response is already on its way.
 */
export async function settle(deps: BilledDeps, call: BilledCall, reported: Settlement): Promise<void> {
  const chargeStartedAt = performance.now();
  let billed: { settlement: Settlement; cost: bigint | null } | null = null;
  let released: Promise<void> | null = null;
  try {
    const charge = chargeFor(reported.usage, call, call.price);
    const settlement = withinBounds(deps, call, reported, charge);
    const cost = deps.config.billingEnabled ? charge.costNanos : null;
    billed = { settlement, cost };
    released = (await settleCall(deps, call, settlement, cost)).released;
  } finally {
    // The engine's slot is free: flow control dispatches the next waiting request, and counts what
    // this one used.
    call.flowPass?.done(billed?.settlement.usage ?? reported.usage);
    // A draining gateway waits for the release too: the limits store hears of every call before it
    // stops.
    const finish = () => call.finish();
    if (released) void released.then(finish, finish);
    else finish();
    const charged = billed && { usage: billed.settlement.usage, cost: billed.cost };
    deps.observer.settled(
      call,
      { status: reported.status, streamed: reported.streamed, firstTokenAt: reported.firstTokenAt, billed: charged },
      chargeStartedAt,
    );
  }
}

/**
 * The charge made durable and the release sent; `released`, the gate's reply to it (it never
 * rejects).
 */
async function settleCall(
  deps: BilledDeps,
  call: BilledCall,
  settlement: Settlement,
  cost: bigint | null,
): Promise<{ released: Promise<void> }> {
  const tokens = settlement.usage.promptTokens + settlement.usage.completionTokens;
  // This call is still counted in flight: one means no other call's charge or release could share
  // the write.
  const alone = deps.inFlight.size === 1;
  // The charge is durable before the gate hears of it: a replica that dies in between leaves a
  // charge the journal holds but the gate was never told of, which the next start finds unreported
  // and rebuilds from.
  if (cost !== null) {
    await deps.journal.append(usageRecord(deps, call, settlement, cost, false), { alone }).catch((error: unknown) => {
      // The data folder cannot be written (disk full?): the charge is kept in memory until the
      // applier writes it.
      deps.log.error('charge journal write failed: the charge is kept in memory only', {
        requestId: call.requestId,
        ...describeError(error),
      });
    });
  }
  // Sent before the answer's last byte, and not waited for. Redis runs one connection's commands in
  // order, so every later admission of this replica (the client's next request, say) comes after
  // it; an admission on another replica that reaches Redis before it sees this call as still
  // running, as if the two had overlapped by that moment.
  const released = deps.gateKeeper.release(call.ticket, { actualTokens: tokens, cost, alone });
  if (deps.gateKeeper.gate.writesQueued) await queuedCommandsWritten();
  if (cachesAnswers(call) && settlement.answer && settlement.status === 200) {
    await deps.cache
      .set(call.cacheKey ?? cacheKey(call.caller.orgId, call.endpoint, call.body), settlement.answer)
      .catch((error: unknown) => {
        deps.log.warn('response cache write failed', { requestId: call.requestId, ...describeError(error) });
      });
  }
  return { released };
}

/**
 * Resolves once the Redis commands issued so far are written to Redis's socket: ioredis's
 * auto-pipelining writes them in a `setImmediate` queued before this one
 * (`src/shared/db/redis.ts`), which would otherwise run after the answer's last byte is written. A
 * release written at once (`defineScript`, `admission/redis-keys.ts`) needs no wait.
 */
function queuedCommandsWritten(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The usage a call is billed for. Engine counts above what the request could
 * use are clamped to its bounds (logged, and counted in
 * `tollgate_usage_over_bound_total`); counts the gateway had to estimate
 * (the engine reported none, or an invalid one) are counted in
 * `tollgate_usage_estimated_total`, and held to the same bounds.
 */
function withinBounds(
  deps: BilledDeps,
  call: BilledCall,
  settlement: Settlement,
  { usage, excess }: Charge,
): Settlement {
  const labels = { model: call.model.id };
  // A client that left (499) gave the engine no chance to report: that is no engine's fault.
  if (settlement.usageSource === 'estimated' && settlement.status !== 499) {
    deps.metrics.usageEstimated.inc(labels);
    deps.log.warn('engine reported no valid usage: billed from an estimate', {
      requestId: call.requestId,
      model: call.model.id,
      status: settlement.status,
    });
  }
  if (!excess) return settlement;
  deps.metrics.usageOverBound.inc(labels);
  deps.metrics.tokensOverBound.inc({ ...labels, kind: 'prompt' }, excess.promptTokens);
  deps.metrics.tokensOverBound.inc({ ...labels, kind: 'completion' }, excess.completionTokens);
  deps.log.warn('engine reported more tokens than the request could use: charged at the bound', {
    requestId: call.requestId,
    model: call.model.id,
    reported: settlement.usage,
    bound: call.bounds,
  });
  return {
    ...settlement,
    usage,
    usageSource: settlement.usageSource === 'upstream' ? 'clamped' : settlement.usageSource,
  };
}

/**
 * Whether the key's response cache answers this request. A Response (`/v1/responses`) never comes
 * from the cache: it is a turn of a conversation, with an id of its own that a stored response and
 * its continuations name; nor does a compaction, whose items carry ids of their own.
 */
export function cachesAnswers(request: AuthorizedRequest): boolean {
  return request.caller.responseCache && request.endpoint !== 'responses' && request.endpoint !== 'responses.compact';
}

/**
 * Whether a call's answer outlives its response: cached (the key's response cache) or stored (its
 * request data).
 */
export function keepsAnswer(request: AuthorizedRequest): boolean {
  return request.caller.responseCache || request.caller.storeRequestData;
}

/**
 * A stream's checkpoints (`billing/stream-checkpoints.ts`): each is the charge this call would get
 * were the process to die now, held to its bounds like any charge, with status 500 (the gateway
 * failed it) and no bodies.
 */
export function streamCheckpoints(deps: BilledDeps, call: BilledCall, promptEstimate: () => number) {
  if (!deps.config.billingEnabled) return NO_CHECKPOINTS;
  return new StreamCheckpoints(
    deps.journal,
    deps.config.streamCheckpoint,
    (reported, usageSource) => {
      const { usage, excess, costNanos } = chargeFor(reported, call, call.price);
      const settlement: Settlement = {
        usage,
        usageSource: excess ? 'clamped' : usageSource,
        status: 500,
        streamed: true,
      };
      return usageRecord(deps, call, settlement, costNanos, false, false);
    },
    promptEstimate,
  );
}

/** Records a cache hit: free, counted against no limit, but in the usage history like any request. */
export async function recordCacheHit(
  deps: BilledDeps,
  request: AuthorizedRequest,
  answer: CachedResponse,
): Promise<void> {
  if (!deps.config.billingEnabled) return;
  const settlement: Settlement = {
    usage: { promptTokens: answer.promptTokens, completionTokens: answer.completionTokens },
    usageSource: 'upstream',
    status: 200,
    streamed: answer.kind === 'sse',
    answer,
  };
  const record = usageRecord(deps, request, settlement, 0n, true);
  await deps.journal.append(record).catch((error: unknown) => {
    deps.log.error('recording a cache hit failed', { requestId: request.requestId, ...describeError(error) });
  });
}

/**
 * The one rule for a call cut short (its client left, a cancel, a stop, the timeout), whoever cut
 * it: a client's request, a background response, a batch line. A call whose engine was streaming
 * (`engine`: every call but an embedding's is streamed from the engine) is billed what the engine
 * generated by then, as a stream is (`streamSettlement`); with no count from it, or before its
 * answer, the prompt it had read, estimated, and no completion. Status 499.
 */
export async function settleCut(
  deps: BilledDeps,
  call: BilledCall,
  promptTokens: number,
  streamed: boolean,
  engine?: StreamState,
): Promise<TokenUsage> {
  const settlement: Settlement = engine
    ? { ...streamSettlement(engine, 'client_closed', () => promptTokens, null), streamed }
    : { usage: { promptTokens, completionTokens: 0 }, usageSource: 'estimated', status: 499, streamed };
  await settle(deps, call, settlement);
  return settlement.usage;
}

/** Ends a JSON call whose client left before its answer (`settleCut`); the 499 goes to nobody. */
export async function settleClientGone(
  deps: BilledDeps,
  call: BilledCall,
  promptTokens: number,
  engine?: StreamState,
): Promise<Response> {
  await settleCut(deps, call, promptTokens, false, engine);
  return new Response(null, { status: 499 });
}

/**
 * Ends a call that failed before it used anything: gives back its hold, its token estimate and its
 * concurrency slot.
 */
export async function abandon(deps: BilledDeps, call: BilledCall): Promise<void> {
  call.flowPass?.done({ promptTokens: 0, completionTokens: 0 });
  try {
    await deps.gateKeeper.release(call.ticket, { actualTokens: 0, cost: null });
  } finally {
    call.finish();
  }
}
