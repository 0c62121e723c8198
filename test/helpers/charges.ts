import type { ChargeRecord } from '../../src/gateway/billing/charge-writes.js';

/**
 * A charge as the request path journals it: one token in, one out, a JSON
 * chat answer, with `cost` and anything in `fields` set by the test.
 *
 * @example
 * await journal.append(chargeRecord('req_1', { orgId, keyId }, 150n));
 */
export function chargeRecord(
  id: string,
  owner: { orgId: string; keyId: string },
  cost: bigint,
  fields: Partial<ChargeRecord> = {},
): ChargeRecord {
  return {
    id,
    orgId: owner.orgId,
    keyId: owner.keyId,
    projectId: null,
    modelId: 'm',
    endpoint: 'chat.completions',
    promptTokens: 1,
    completionTokens: 1,
    cost,
    status: 200,
    streamed: false,
    usageSource: 'upstream',
    latencyMs: 1,
    ttftMs: null,
    ...fields,
  };
}
