import { chargeFor } from '../../billing/holds.js';
import type { TokenPrice } from '../../billing/money.js';
import type { TokenUsage } from '../../billing/token-usage.js';
import type { Settlement } from '../../billing/settlement.js';
import type { AdmittedCharge, BackgroundRequest, BackgroundRow } from '../../stored-responses/background-store.js';
import { describeError } from '../../../shared/http/log.js';
import type { BilledCall } from '../authorize.js';
import { recordOf } from '../usage-record.js';
import type { BilledDeps } from '../endpoint.js';

// A background job's bill when the replica that ran it died: what it generated, as its row kept
// it, billed by the replica that takes it over, with or without admitting it again.

/** What a job's first admission took, kept with the job when it is queued. */
export function admittedCharge(call: BilledCall): AdmittedCharge {
  const { price, bounds } = call;
  return {
    modelId: call.model.id,
    price: {
      inputPerToken: price.inputPerToken.toString(),
      cachedInputPerToken: price.cachedInputPerToken?.toString() ?? null,
      outputPerToken: price.outputPerToken.toString(),
    },
    bounds: { promptTokens: bounds.promptTokens, completionTokens: bounds.completionTokens },
    holdNanos: call.holdNanos.toString(),
    budgetTag: call.ticket.budgetTag,
  };
}

/**
 * What a job whose replica died had generated, as that replica last wrote it (every 250 ms): the
 * engine's running count when it reported one (its cached and reasoning tokens with it), else its
 * prompt's estimate and the chunks that carried tokens. What came after that write is lost with
 * the replica.
 */
export function cutUsage(
  row: Pick<BackgroundRow, 'promptTokens' | 'generatedTokens' | 'cachedTokens' | 'reasoningTokens'>,
): TokenUsage {
  return {
    promptTokens: row.promptTokens,
    completionTokens: row.generatedTokens,
    cachedTokens: row.cachedTokens,
    reasoningTokens: row.reasoningTokens,
  };
}

/**
 * Bills a job that reached the engine on a replica that died, when the replica taking it over
 * cannot admit it again (its model disabled, its key revoked, its wallet spent): at the price,
 * bounds and hold of its first admission, under its own request id (one charge, whichever replica
 * writes it first), made durable in the journal before the gate hears of it, as `settle` does. The
 * usage billed (held to its bounds), or null when nothing could be (a job queued before its
 * admission was kept with it).
 */
export async function chargeLeftBehind(
  deps: BilledDeps,
  row: BackgroundRow,
  usage: TokenUsage,
): Promise<TokenUsage | null> {
  const { admitted, projectId } = JSON.parse(row.request) as BackgroundRequest;
  if (!admitted) {
    deps.log.error('a background response taken over could not be billed: its admission was not kept', {
      id: row.id,
      requestId: row.requestId,
    });
    return null;
  }
  const hold = { bounds: admitted.bounds, holdNanos: BigInt(admitted.holdNanos) };
  const { usage: billed, excess, costNanos } = chargeFor(usage, hold, priceOf(admitted));
  if (!deps.config.billingEnabled) return billed;
  const subject = { id: row.requestId, orgId: row.orgId, keyId: row.keyId, projectId, batchId: null };
  const settlement: Settlement = {
    usage: billed,
    usageSource: excess ? 'clamped' : 'estimated',
    status: 500,
    streamed: true,
  };
  const record = recordOf({ ...subject, modelId: admitted.modelId, endpoint: 'responses' }, settlement, costNanos, {
    latencyMs: Math.max(0, Date.now() - row.createdAt.getTime()),
    ttftMs: null,
    cacheHit: false,
  });
  await deps.journal.append(record).catch((error: unknown) => {
    deps.log.error('charge journal write failed: the charge is kept in memory only', {
      requestId: row.requestId,
      ...describeError(error),
    });
  });
  const { requestId, orgId, keyId } = row;
  await deps.gateKeeper.chargeLeftBehind({ requestId, orgId, keyId, cost: costNanos, budgetTag: admitted.budgetTag });
  return billed;
}

function priceOf(admitted: AdmittedCharge): TokenPrice {
  const { inputPerToken, cachedInputPerToken, outputPerToken } = admitted.price;
  return {
    inputPerToken: BigInt(inputPerToken),
    cachedInputPerToken: cachedInputPerToken === null ? null : BigInt(cachedInputPerToken),
    outputPerToken: BigInt(outputPerToken),
  };
}
