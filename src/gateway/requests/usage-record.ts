import { bodiesToStore } from '../billing/request-data.js';
import type { Settlement } from '../billing/settlement.js';
import type { ChargeRecord } from '../billing/charge-writes.js';
import type { CachedResponse } from '../cache/response-cache.js';
import type { AuthorizedRequest } from './authorize.js';
import type { BilledDeps } from './endpoint.js';

// A call's usage record: what its charge writes, with the bodies when its key keeps them.

/** The usage record of a request billed `cost` for `settlement`, its bodies kept if its key asks. */
export function usageRecord(
  deps: BilledDeps,
  request: AuthorizedRequest,
  settlement: Settlement,
  cost: bigint,
  cacheHit: boolean,
  withBodies = true,
): ChargeRecord {
  const record = recordOf(subjectOf(request), settlement, cost, {
    latencyMs: Math.round(performance.now() - request.startedAt),
    ttftMs: settlement.firstTokenAt ? Math.round(settlement.firstTokenAt - request.startedAt) : null,
    cacheHit,
  });
  if (request.caller.storeRequestData && withBodies) {
    const response = settlement.answer ? answerText(settlement.answer) : '';
    record.requestData = bodiesToStore(JSON.stringify(request.body), response, deps.config.requestData.maxBytes);
  }
  return record;
}

/** Whom and what a usage record is of: the request it bills. */
export type RecordSubject = Pick<
  ChargeRecord,
  'id' | 'orgId' | 'keyId' | 'projectId' | 'modelId' | 'endpoint' | 'batchId'
>;

function subjectOf(request: AuthorizedRequest): RecordSubject {
  return {
    id: request.requestId,
    orgId: request.caller.orgId,
    keyId: request.caller.id,
    projectId: request.projectId,
    modelId: request.model.id,
    endpoint: request.endpoint,
    batchId: request.batchId ?? null,
  };
}

/**
 * The one way a usage record is written, whoever bills: a call settled here, or a background
 * response whose replica died (`responses/background-charge.ts`). Every token count the
 * settlement has, cached and reasoning included.
 */
export function recordOf(
  subject: RecordSubject,
  settlement: Settlement,
  cost: bigint,
  timing: { latencyMs: number; ttftMs: number | null; cacheHit: boolean },
): ChargeRecord {
  return {
    ...subject,
    promptTokens: settlement.usage.promptTokens,
    completionTokens: settlement.usage.completionTokens,
    cachedTokens: settlement.usage.cachedTokens ?? 0,
    reasoningTokens: settlement.usage.reasoningTokens ?? 0,
    cost,
    status: settlement.status,
    streamed: settlement.streamed,
    usageSource: settlement.usageSource,
    ...timing,
    // Set here, not by the store: a charge written late (after an outage) keeps the time it was
    // made.
    createdAt: new Date(),
  };
}

/** The answer as text: the JSON body, or the stream's events one per line. */
function answerText(answer: CachedResponse): string {
  return answer.kind === 'json' ? answer.body : answer.events.join('\n');
}
