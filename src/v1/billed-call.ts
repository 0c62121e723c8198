import type { Context } from 'hono';
import { costOf } from '../billing/money.js';
import { type ModelRow, pickModel, type PriceRow, requestedModelName } from '../catalog/service.js';
import type { TaskType } from '../db/schema.js';
import type { UpstreamTarget } from '../engines/types.js';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { describeError } from '../http/log.js';
import { readJsonObject } from '../http/request.js';
import { assertProjectOf, type AuthenticatedKey, verifiedKey } from '../keys/service.js';
import { estimateRequestTokens } from '../limits/estimate.js';
import { type LimitLease, UNLIMITED_LEASE } from '../limits/limiter.js';
import { holdAmount } from '../billing/holds.js';
import type { TokenUsage, UsageSource } from '../proxy/usage.js';
import type { Services } from '../services.js';
import { admissionQuery } from './admission-query.js';
import { validateChatRequest, validateEmbeddingsRequest } from './validate.js';

/** A request that passed every check and may be sent upstream; `settle` bills it. */
export interface BilledCall {
  requestId: string;
  caller: AuthenticatedKey;
  model: ModelRow;
  price: PriceRow;
  /** The model as the client named it (id, display name or repo id); responses echo it. */
  clientModel: string;
  projectId: string | null;
  body: Record<string, unknown>;
  startedAt: number;
  /** What the request took from its key's limits; `settle` and `abandon` give it back. */
  lease: LimitLease;
}

/**
 * The steps every billed /v1 request shares, in the order of the request path:
 * key, body, model, task, project, wallet. Chat and embeddings both call this.
 * Key, model, price and balance come from one read (`admission-query.ts`).
 */
export async function admit(c: Context<GatewayEnv>, services: Services, task: TaskType): Promise<BilledCall> {
  const startedAt = performance.now();
  const authorization = c.req.header('authorization');
  const hash = services.keys.secretHashOf(authorization);
  // A bad body from a bad key is a 401 first, as for every other route.
  const { body, bytes } = await readJsonObject(c, services.config.maxBodyBytes).catch(async (error: unknown) => {
    await unavailableOnFailure('billing_unavailable', () => services.keys.authenticate(authorization));
    throw error;
  });
  const modelName = await requestedModelNameAfterAuth(services, authorization, body.model);
  const rows = await unavailableOnFailure('billing_unavailable', () => admissionQuery(services.db).execute({ hash, model: modelName }));
  const caller = verifiedKey(rows[0]?.key, hash);
  c.set('caller', caller);
  const { model, price } = pickModel(rows, modelName);
  if (model.taskType !== task) {
    const message =
      task === 'embedding'
        ? `The model \`${modelName}\` is not an embedding model. GET /v1/models?task_type=embedding lists embedding models.`
        : `The model \`${modelName}\` is an embedding model; use POST /v1/embeddings.`;
    throw new GatewayError('model_not_found', message);
  }
  if (task === 'chat') validateChatRequest(body);
  else validateEmbeddingsRequest(body);
  if (!price) throw new GatewayError('pricing_unavailable', 'This model has no price set, so it cannot be billed. Retry later.', { headers: { 'Retry-After': '30' } });
  const projectId = await projectFor(c, services, caller);
  const requestId = c.get('requestId');
  if (services.config.billingEnabled) {
    const amount = holdAmount({ bodyBytes: bytes, body, task, contextLength: model.contextLength }, price);
    await holdFunds(services, caller.orgId, requestId, amount, rows[0]!.balance);
  }
  // Limits come last: a refusal by them gives back the hold, and a refusal above takes nothing from them.
  let lease = UNLIMITED_LEASE;
  if (services.limiter) {
    const estimate = estimateRequestTokens(body, task, services.config.limits.completionEstimate);
    lease = await services.limiter.admit(caller.id, caller, estimate).catch(async (error: unknown) => {
      await releaseHold(services, requestId);
      throw error;
    });
  }
  for (const [name, value] of Object.entries(lease.headers)) c.header(name, value);
  return { requestId, caller, model, price, clientModel: modelName, projectId, body, startedAt, lease };
}

/**
 * Holds the most the request can cost on the wallet (402 when the wallet has
 * nothing available: balance less what requests in flight may still cost).
 */
async function holdFunds(services: Services, orgId: string, requestId: string, amount: bigint, balance: bigint): Promise<void> {
  const insufficient = () => new GatewayError('insufficient_funds', 'The wallet balance is zero or negative, or held by requests in flight. Top up the wallet to continue.');
  // Most broke wallets are turned away here, without a write.
  if (balance <= 0n) throw insufficient();
  const ttlMs = services.config.upstreamTimeoutMs + 60_000;
  const held = await unavailableOnFailure('billing_unavailable', () => services.wallets.hold(orgId, requestId, amount, ttlMs));
  if (!held) throw insufficient();
}

async function releaseHold(services: Services, requestId: string): Promise<void> {
  if (!services.config.billingEnabled) return;
  // If this fails the hold expires by itself (see WalletService.sweepExpiredHolds).
  await services.charges.release(requestId).catch((error: unknown) => services.log.warn('hold release failed', { requestId, ...describeError(error) }));
}

/** The model name, or, when the body names none, 401 for a bad key before 400 for the model. */
async function requestedModelNameAfterAuth(services: Services, authorization: string | undefined, name: unknown): Promise<string> {
  try {
    return requestedModelName(name);
  } catch (error) {
    await unavailableOnFailure('billing_unavailable', () => services.keys.authenticate(authorization));
    throw error;
  }
}

/** `X-Project-ID` names a project of the caller's organization; without it, the key's own project. */
async function projectFor(c: Context<GatewayEnv>, services: Services, caller: AuthenticatedKey): Promise<string | null> {
  const header = c.req.header('x-project-id')?.trim();
  if (!header) return caller.projectId;
  await unavailableOnFailure('billing_unavailable', () => assertProjectOf(services.db, caller.orgId, header));
  return header;
}

export interface Settlement {
  usage: TokenUsage;
  usageSource: UsageSource;
  status: number;
  streamed: boolean;
  firstTokenAt?: number | null;
}

/**
 * Charges the call's exact cost and records its usage, in one transaction.
 * Never throws: the response is already on its way, so a failure is logged
 * loudly with everything needed to bill it by hand.
 */
export async function settle(services: Services, call: BilledCall, settlement: Settlement): Promise<void> {
  const cost = costOf(settlement.usage, call.price);
  const record = {
    id: call.requestId,
    orgId: call.caller.orgId,
    keyId: call.caller.id,
    projectId: call.projectId,
    modelId: call.model.id,
    endpoint: call.model.taskType === 'embedding' ? 'embeddings' : 'chat.completions',
    promptTokens: settlement.usage.promptTokens,
    completionTokens: settlement.usage.completionTokens,
    cost,
    status: settlement.status,
    streamed: settlement.streamed,
    usageSource: settlement.usageSource,
    latencyMs: Math.round(performance.now() - call.startedAt),
    ttftMs: settlement.firstTokenAt ? Math.round(settlement.firstTokenAt - call.startedAt) : null,
  };
  if (services.config.billingEnabled) {
    try {
      await services.charges.write(record);
    } catch (error) {
      services.log.error('charge failed: usage not recorded', { ...record, cost: cost.toString(), ...describeError(error) });
    }
  }
  await call.lease.settle(settlement.usage.promptTokens + settlement.usage.completionTokens);
}

/** The engine target for the call's model; when none is ready, the call ends without using anything. */
export async function acquireOrAbandon(services: Services, call: BilledCall): Promise<UpstreamTarget> {
  try {
    return services.fleet.acquire(call.model.id);
  } catch (error) {
    await abandon(services, call);
    throw error;
  }
}

/** Ends a call that failed before it used anything: gives back its hold, its token estimate and its concurrency slot. */
export async function abandon(services: Services, call: BilledCall): Promise<void> {
  await Promise.all([call.lease.settle(0), releaseHold(services, call.requestId)]);
}

async function unavailableOnFailure<T>(code: 'billing_unavailable' | 'pricing_unavailable', step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    const what = code === 'billing_unavailable' ? 'billing' : 'pricing';
    throw new GatewayError(code, `The gateway cannot check ${what} right now. Retry with backoff.`, { headers: { 'Retry-After': '2' }, cause: error });
  }
}
