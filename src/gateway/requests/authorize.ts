import type { Context } from 'hono';
import { holdFor } from '../billing/holds.js';
import type { TokenBounds } from '../billing/token-bounds.js';
import { pickModel, requestedModelName } from '../catalog/service.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { headerOf, readJsonObject } from '../../shared/http/request.js';
import { type AuthenticatedKey, verifiedKey } from '../keys/service.js';
import { isProjectId } from '../../shared/db/ids.js';
import { withinStoreTimeout } from '../../shared/db/timeout.js';
import { estimateRequestTokens } from '../admission/estimate.js';
import type { RatePass, Ticket } from '../admission/gate-keeper.js';
import type { RequestTrace } from '../../shared/observability/tracing.js';
import { keyHeaderOf } from './auth.js';
import { BAND_HEADER, requestedBand } from '../flow/bands.js';
import type { FlowPass } from '../flow/flow-types.js';
import type { AuthorizedRequest } from './authorized-request.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from './endpoint.js';

export type { AuthorizedRequest } from './authorized-request.js';

/** A request that holds funds and limits and may go upstream; `settle` or `abandon` ends it. */
export interface BilledCall extends AuthorizedRequest {
  /**
   * What the request took from its key's limits and its wallet; given back when it ends
   * (`GateKeeper.release`).
   */
  ticket: Ticket;
  /** The most tokens the request can use; its charge is clamped to them. */
  bounds: TokenBounds;
  /**
   * The hold on the wallet: the bounds at the model's prices, and so the most the request is
   * charged.
   */
  holdNanos: bigint;
  /**
   * Marks the call as ended for a draining gateway; `settle` and `abandon` call it once billing is
   * done.
   */
  finish(): void;
  /** The request's spans when tracing is on (`observability/tracing.ts`). */
  trace: RequestTrace | undefined;
  /**
   * Its place on the engines once flow control dispatched it (`flow/flow-control.ts`); given back
   * when it is settled.
   */
  flowPass: FlowPass | null;
  /**
   * `performance.now()` when the call left for an engine, when the engine's answer began, and when
   * its last byte came (0: not yet).
   */
  upstreamAt: number;
  answeredAt: number;
  upstreamDoneAt: number;
}

/**
 * The checks every billed /v1 request shares, in the order of the request path: key, body, model,
 * task, parameters, price, project. Key, model, price and project come from this process's
 * request-path cache (`catalog/request-path-cache.ts`). Takes nothing: a request refused here costs
 * nothing and counts against no limit.
 */
export async function authorize(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  endpoint: BilledEndpoint,
): Promise<AuthorizedRequest> {
  const { task } = endpoint;
  const startedAt = performance.now();
  const authorization = keyHeaderOf(c, endpoint.acceptsApiKeyHeader);
  const hash = deps.keys.secretHashOf(authorization);
  // A bad body from a bad key is a 401 first, as for every other route.
  const { body, bytes, raw } = await readJsonObject(
    c,
    deps.config.maxBodyBytes,
    deps.config.oversizeDrain,
    deps.config.maxJsonDepth,
    { members: deps.repeatedMembers, sender: hash },
  ).catch(async (error: unknown) => {
    await unavailableOnFailure(deps, () => deps.keys.authenticate(authorization));
    throw error;
  });
  const modelName = await requestedModelNameAfterAuth(deps, authorization, body.model);
  // Both from this process's cache in steady state: no database round trip.
  const [keyRow, matches] = await unavailableOnFailure(deps, () =>
    Promise.all([deps.requestPathCache.keyByHash(hash), deps.requestPathCache.modelMatches(modelName)]),
  );
  const caller = verifiedKey(keyRow, hash);
  // Kept only for a real key: a made-up one fills nothing.
  deps.repeatedMembers.keep(hash, raw, body);
  c.set('caller', caller);
  const { model, price } = pickModel(matches, modelName);
  c.set('model', model.id);
  if (model.taskType !== task) {
    const message =
      task === 'embedding'
        ? `The model \`${modelName}\` is not an embedding model. GET /v1/models?task_type=embedding lists embedding models.`
        : `The model \`${modelName}\` is an embedding model; use POST /v1/embeddings.`;
    throw new GatewayError('model_not_found', message);
  }
  endpoint.validate(body, deps.config);
  if (!price)
    throw new GatewayError('pricing_unavailable', 'This model has no price set, so it cannot be billed. Retry later.', {
      headers: { 'Retry-After': '30' },
    });
  const projectId = await projectFor(c, deps, caller);
  const band = requestedBand(headerOf(c, BAND_HEADER), caller.band);
  return {
    requestId: c.get('requestId'),
    task,
    endpoint: endpoint.name,
    caller,
    model,
    price,
    clientModel: modelName,
    projectId,
    band,
    body,
    rawBody: raw,
    bodyBytes: bytes,
    startedAt,
  };
}

/**
 * Takes what the request may use (`GateKeeper`, `admission/gate-keeper.ts`): a
 * hold on the wallet for the most it can cost (402 when nothing is
 * spendable) and its key's token limits (429), and its requests per minute
 * and concurrency unless `rate` took them already (`GateKeeper.admitRate`),
 * which this takes over. A request refused here takes nothing (the caller
 * gives `rate` back). The bounds, the hold and the estimate are the body the
 * engine is sent (`ProtocolCall`), with whatever the protocol added. The gate's headers for the
 * client are the ticket's (`ticket.headers`); `trace`, a client's request's.
 */
export async function reserve(
  deps: BilledDeps,
  request: AuthorizedRequest,
  protocol: ProtocolCall,
  { rate, trace }: { rate?: RatePass; trace?: RequestTrace } = {},
): Promise<BilledCall> {
  // From what the engine is sent, not the client's body alone: a Responses turn sends its stored
  // conversation too.
  const bounded = protocol.bounded;
  const { bounds, holdNanos } = holdFor(
    { bodyBytes: protocol.sentBytes, body: bounded, task: request.task, contextLength: request.model.contextLength },
    request.price,
  );
  const admitting = deps.gateKeeper.admit({
    requestId: request.requestId,
    caller: request.caller,
    estimatedTokens: estimateRequestTokens(
      bounded,
      request.task,
      deps.config.limits.completionEstimate,
      // A translation's tools were written for the ceiling already (`sent-body.ts`): not written
      // again here.
      deps.translations.json,
    ),
    holdNanos,
    rate,
    projectId: request.projectId,
    // Not yet counted in flight itself: none in flight means no other call could share its write to
    // the gate.
    alone: deps.inFlight.size === 0,
  });
  const ticket = await withinStoreTimeout(admitting).catch((error: unknown) => {
    if (error instanceof GatewayError) throw error;
    // Timed out: if the gate admits it after all, give everything back at once.
    admitting.then(
      (late) => deps.gateKeeper.release(late, { actualTokens: 0, cost: null }),
      () => {},
    );
    throw new GatewayError(
      'limits_unavailable',
      'The gateway cannot check rate limits right now. Retry with backoff.',
      { headers: { 'Retry-After': '1' }, cause: error },
    );
  });
  const finish = deps.inFlight.begin();
  // Every field named, not `{ ...request, ticket, … }`: V8 (Node 20) takes a slow path for a spread
  // followed by properties its source lacks, about 15 µs a request here (CONTRIBUTING, "Measured on
  // the request path").
  const { requestId, task, endpoint: name, caller, model, price, clientModel, projectId, band } = request;
  const { body, rawBody, bodyBytes, startedAt, cacheKey, batchId } = request;
  return {
    requestId,
    task,
    endpoint: name,
    caller,
    model,
    price,
    clientModel,
    projectId,
    band,
    body,
    rawBody,
    bodyBytes,
    startedAt,
    cacheKey,
    batchId,
    ticket,
    bounds,
    holdNanos,
    finish,
    trace,
    flowPass: null,
    upstreamAt: 0,
    answeredAt: 0,
    upstreamDoneAt: 0,
  };
}

/** The model name, or, when the body names none, 401 for a bad key before 400 for the model. */
async function requestedModelNameAfterAuth(
  deps: BilledDeps,
  authorization: string | undefined,
  name: unknown,
): Promise<string> {
  try {
    return requestedModelName(name);
  } catch (error) {
    await unavailableOnFailure(deps, () => deps.keys.authenticate(authorization));
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
async function projectFor(c: Context<GatewayEnv>, deps: BilledDeps, caller: AuthenticatedKey): Promise<string | null> {
  const header = headerOf(c, 'x-project-id')?.trim();
  if (!header) return caller.projectId;
  if (caller.projectId !== null) {
    if (header === caller.projectId) return header;
    throw new GatewayError(
      'forbidden',
      "This API key belongs to one project and may only be used for it: drop X-Project-ID or send that project's id.",
    );
  }
  if (!isProjectId(header))
    throw new GatewayError('project_not_found', 'X-Project-ID does not name a project of this organization.');
  const owner = await unavailableOnFailure(deps, () => deps.requestPathCache.projectOrg(header));
  if (owner !== caller.orgId)
    throw new GatewayError('project_not_found', 'X-Project-ID does not name a project of this organization.');
  return header;
}

/**
 * A store that cannot be read (or does not answer within STORE_TIMEOUT_MS) means billing cannot be
 * checked: 503, retry later.
 */
async function unavailableOnFailure<T>(deps: BilledDeps, step: () => Promise<T>): Promise<T> {
  const startedAt = Date.now();
  try {
    // Success is not logged here: most steps are answered from memory; the store's own readers say
    // when it is back.
    return await withinStoreTimeout(step());
  } catch (error) {
    if (error instanceof GatewayError) throw error;
    deps.storeOutage.failed(error, startedAt);
    throw new GatewayError('billing_unavailable', 'The gateway cannot check billing right now. Retry with backoff.', {
      headers: { 'Retry-After': '2' },
      cause: error,
    });
  }
}
