import type { Context } from 'hono';
import { costOf } from '../billing/money.js';
import { type TokenBounds, tokenBoundsOf } from '../billing/token-bounds.js';
import { type ModelRow, pickModel, type PriceRow, requestedModelName } from '../catalog/service.js';
import type { TaskType } from '../db/schema.js';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { describeError } from '../http/log.js';
import { readJsonObject } from '../http/request.js';
import { assertProjectOf, type AuthenticatedKey, verifiedKey } from '../keys/service.js';
import { isProjectId } from '../db/ids.js';
import { withinStoreTimeout } from '../db/timeout.js';
import { estimateRequestTokens } from '../limits/estimate.js';
import { type LimitLease, UNLIMITED_LEASE } from '../limits/limiter.js';
import type { Services } from '../services.js';
import { admissionQuery } from './admission-query.js';
import { validateChatRequest, validateEmbeddingsRequest } from './validate.js';

/** A request whose key, model, body, price and project are known good. */
export interface AuthorizedRequest {
  requestId: string;
  task: TaskType;
  caller: AuthenticatedKey;
  model: ModelRow;
  price: PriceRow;
  /** The model as the client named it (id, display name or repo id); responses echo it. */
  clientModel: string;
  projectId: string | null;
  body: Record<string, unknown>;
  bodyBytes: number;
  startedAt: number;
}

/** A request that holds funds and limits and may go upstream; `settle` or `abandon` ends it. */
export interface BilledCall extends AuthorizedRequest {
  /** What the request took from its key's limits; given back when it ends. */
  lease: LimitLease;
  /** The most tokens the request can use; its charge is clamped to them. */
  bounds: TokenBounds;
  /** The hold on the wallet: the bounds at the model's prices, and so the most the request is charged. */
  holdNanos: bigint;
  /** Marks the call as ended for a draining gateway; `settle` and `abandon` call it once billing is done. */
  finish(): void;
}

/**
 * The checks every billed /v1 request shares, in the order of the request
 * path: key, body, model, task, parameters, price, project. Key, model, price
 * and balance come from one read (`admission-query.ts`). Takes nothing: a
 * request refused here costs nothing and counts against no limit.
 */
export async function authorize(c: Context<GatewayEnv>, services: Services, task: TaskType): Promise<AuthorizedRequest & { balance: bigint }> {
  const startedAt = performance.now();
  const authorization = c.req.header('authorization');
  const hash = services.keys.secretHashOf(authorization);
  // A bad body from a bad key is a 401 first, as for every other route.
  const { body, bytes } = await readJsonObject(c, services.config.maxBodyBytes).catch(async (error: unknown) => {
    await unavailableOnFailure(services, () => services.keys.authenticate(authorization));
    throw error;
  });
  const modelName = await requestedModelNameAfterAuth(services, authorization, body.model);
  const rows = await unavailableOnFailure(services, () => admissionQuery(services.db).execute({ hash, model: modelName }));
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
  const request = { requestId: c.get('requestId'), task, caller, model, price, clientModel: modelName, projectId, body, bodyBytes: bytes, startedAt };
  return { ...request, balance: rows[0]!.balance };
}

/**
 * Takes what the request may use: a hold on the wallet for the most it can
 * cost (402 when nothing is available) and its key's limits (429). A request
 * refused by either keeps nothing from the other.
 */
export async function reserve(c: Context<GatewayEnv>, services: Services, request: AuthorizedRequest & { balance: bigint }): Promise<BilledCall> {
  const { balance, ...authorized } = request;
  // The hold and the limits are independent round trips: take them together, and give back
  // whichever succeeded when the other refuses (the wallet's refusal first, as it comes first).
  const bounds = tokenBoundsOf({ bodyBytes: request.bodyBytes, body: request.body, task: request.task, contextLength: request.model.contextLength });
  const holdNanos = costOf(bounds, request.price);
  const hold = services.config.billingEnabled ? holdFunds(services, request.caller.orgId, request.requestId, holdNanos, balance) : Promise.resolve();
  const limits = services.limiter
    ? services.limiter.admit(request.caller.id, request.caller, estimateRequestTokens(request.body, request.task, services.config.limits.completionEstimate))
    : Promise.resolve(UNLIMITED_LEASE);
  const [held, leased] = await Promise.allSettled([hold, limits]);
  if (held.status === 'rejected' || leased.status === 'rejected') {
    // A store that failed or timed out may still have taken the hold: give it back too (a no-op when it did not).
    if (held.status === 'fulfilled' || isStoreFailure(held.reason)) await releaseHold(services, request.requestId);
    if (leased.status === 'fulfilled') await leased.value.cancel();
    throw held.status === 'rejected' ? held.reason : (leased as PromiseRejectedResult).reason;
  }
  const lease = leased.value;
  for (const [name, value] of Object.entries(lease.headers)) c.header(name, value);
  const ended = services.inFlight.begin();
  const untrack = services.config.billingEnabled ? services.holdLeases.track(request.requestId) : () => {};
  const finish = () => {
    untrack();
    ended();
  };
  return { ...authorized, lease, bounds, holdNanos, finish };
}

/**
 * Gives back a request's hold. If the store cannot take the release now, it
 * waits in the spool (memory and the data folder) and is retried until it
 * can; only a gateway killed with it still unwritten leaves the hold to
 * expire (see WalletService.sweepExpiredHolds).
 */
export async function releaseHold(services: Services, requestId: string): Promise<void> {
  if (!services.config.billingEnabled) return;
  await services.charges.release(requestId).catch(async (error: unknown) => {
    services.storeOutage.failed(error);
    services.log.debug('hold release failed: kept to retry', { requestId, ...describeError(error) });
    await services.spool.addRelease(requestId).catch(() => {});
  });
}

function isStoreFailure(error: unknown): boolean {
  return error instanceof GatewayError && error.code === 'billing_unavailable';
}

async function holdFunds(services: Services, orgId: string, requestId: string, amount: bigint, balance: bigint): Promise<void> {
  const insufficient = () =>
    new GatewayError('insufficient_funds', 'The wallet balance is zero or negative, or held by requests in flight. Top up the wallet to continue.');
  // Most broke wallets are turned away here, without a write.
  if (balance <= 0n) throw insufficient();
  const held = await unavailableOnFailure(services, () => services.wallets.hold(orgId, requestId, amount, services.config.holdLeaseMs));
  if (!held) throw insufficient();
}

/** The model name, or, when the body names none, 401 for a bad key before 400 for the model. */
async function requestedModelNameAfterAuth(services: Services, authorization: string | undefined, name: unknown): Promise<string> {
  try {
    return requestedModelName(name);
  } catch (error) {
    await unavailableOnFailure(services, () => services.keys.authenticate(authorization));
    throw error;
  }
}

/**
 * The project a request is booked to. Without `X-Project-ID`, the key's own
 * project. A key made for a project may name only that project (403
 * `forbidden` otherwise); an organization-wide key may name any project of its
 * organization (403 `project_not_found` otherwise, as for an unknown id, so
 * other tenants' ids cannot be probed). Errors never echo the header back.
 */
async function projectFor(c: Context<GatewayEnv>, services: Services, caller: AuthenticatedKey): Promise<string | null> {
  const header = c.req.header('x-project-id')?.trim();
  if (!header) return caller.projectId;
  if (caller.projectId !== null) {
    if (header === caller.projectId) return header;
    throw new GatewayError('forbidden', 'This API key belongs to one project and may only be used for it: drop X-Project-ID or send that project\'s id.');
  }
  if (!isProjectId(header)) throw new GatewayError('project_not_found', 'X-Project-ID does not name a project of this organization.');
  await unavailableOnFailure(services, () => assertProjectOf(services.db, caller.orgId, header));
  return header;
}

/** A store that cannot be read (or does not answer within STORE_TIMEOUT_MS) means billing cannot be checked: 503, retry later. */
async function unavailableOnFailure<T>(services: Services, step: () => Promise<T>): Promise<T> {
  try {
    const result = await withinStoreTimeout(step());
    services.storeOutage.succeeded();
    return result;
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    services.storeOutage.failed(error);
    throw new GatewayError('billing_unavailable', 'The gateway cannot check billing right now. Retry with backoff.', {
      headers: { 'Retry-After': '2' },
      cause: error,
    });
  }
}
