import { batchPrice } from '../billing/money.js';
import { chargeFor } from '../billing/holds.js';
import { pickModel, type PriceRow, requestedModelName } from '../catalog/service.js';
import { verifiedKey } from '../keys/caller.js';
import type { CallAbort } from '../proxy/call-abort.js';
import type { UpstreamTarget } from '../engines/types.js';
import { envelopeOf, GatewayError } from '../../shared/http/errors.js';
import { admitCall } from '../requests/admit.js';
import type { AuthorizedRequest, BilledCall } from '../requests/authorize.js';
import { abandon, settle, settleCut } from '../requests/billed-call.js';
import { abortAfter } from '../requests/engine-call.js';
import { waitForEngines } from '../requests/flow-wait.js';
import { CHAT } from '../requests/chat.js';
import { COMPLETIONS } from '../requests/completions.js';
import { EMBEDDINGS } from '../requests/embeddings.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from '../requests/endpoint.js';
import { type JsonRelay, sendJson, writtenJson } from '../requests/json-answer.js';
import { invalid } from '../requests/validate.js';
import { insufficientFunds } from '../admission/refusals.js';
import { type LineResult, NO_TOKENS } from './line-store.js';
import type { BatchEndpoint, BatchRow } from './objects.js';

type Json = Record<string, unknown>;

/** The protocol a line calls, by its `url`. */
export type LineEndpoints = Readonly<Record<BatchEndpoint, BilledEndpoint>>;

/**
 * Every batch endpoint's protocol: the Responses API's is the one its route serves, made with the
 * stores its responses and conversations are kept in (`responsesEndpoint`), so a line's response
 * is kept, and continues one, as the route's is.
 */
export function lineEndpoints(responses: BilledEndpoint): LineEndpoints {
  return {
    '/v1/chat/completions': CHAT,
    '/v1/completions': COMPLETIONS,
    '/v1/embeddings': EMBEDDINGS,
    '/v1/responses': responses,
  };
}

/** A line to run: its request as the input file had it, under its own request id. */
export interface RunnableLine {
  batchId: string;
  line: number;
  url: string;
  body: string;
  requestId: string;
}

/**
 * How a line's run ended: a result to record, `retry` (a refusal that may pass: the key's limits,
 * a busy store; the line goes back to waiting), or `dry` (the wallet could not hold its cost).
 */
export type LineOutcome =
  { kind: 'result'; result: LineResult } | { kind: 'retry' } | { kind: 'dry'; result: LineResult };

/**
 * Runs one batch line as the request it is, with no client, through its url's protocol of
 * `endpoints`: its key found again by its hash, its model, project and checks as `authorize` has
 * them, the protocol's call begun (a Responses line's earlier turns read in the batch's
 * organization only), admitted (its own hold at the batch price, the key's limits), dispatched in
 * flow control's `batch` band (only room no other band wants), sent to the engine as JSON, answered
 * as its route answers (`writtenJson`), and billed by `settle` at the engine's counts and the
 * batch price, under the line's request id. `abort` stops it wherever it is: an aborted call that
 * reached the engine is billed its prompt (status 499), as a client that leaves is.
 */
export async function runLine(
  deps: BilledDeps,
  endpoints: LineEndpoints,
  batch: BatchRow,
  line: RunnableLine,
  abort: CallAbort,
): Promise<LineOutcome> {
  let call: BilledCall;
  let protocol: ProtocolCall;
  let endpoint: BilledEndpoint;
  try {
    endpoint = endpoints[line.url as BatchEndpoint];
    ({ call, protocol } = await admitCall(deps, await lineRequest(deps, batch, line, endpoint), endpoint));
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    if (error.status === 402) return { kind: 'dry', result: dryLine(error) };
    if (error.status === 429 || error.status >= 500) return { kind: 'retry' };
    return { kind: 'result', result: errorLine(error) };
  }
  // Stopped wherever it is when its key is revoked, its model disabled or its wallet spent, on any
  // replica.
  const untrack = deps.detachedCalls.track({
    orgId: call.caller.orgId,
    keyId: call.caller.id,
    modelId: call.model.id,
    stop: (reason) => abort.abort(reason),
  });
  try {
    // While it waits no engine request is open: the abort's one listener takes it out of the queue.
    const dispatched = await waitForEngines(
      deps,
      call,
      protocol,
      () => abort.aborted,
      (leave) => abort.onAbort(leave),
    );
    if (!dispatched || !(await stillAllowed(deps, batch, call, abort))) {
      await abandon(deps, call);
      return stoppedOutcome(abort, NO_TOKENS);
    }
    return await sendLine(deps, call, protocol, endpoint, abort);
  } finally {
    untrack();
  }
}

/**
 * A line claimed a while ago is checked again when its turn comes, before the engine: its key
 * (revoked or expired since?) and its model (disabled since?), as the request path reads them
 * now, and its organization's wallet (spent since, on any replica?), as PostgreSQL has it. One
 * that fails is stopped with the error a new request would get, billed nothing.
 */
async function stillAllowed(deps: BilledDeps, batch: BatchRow, call: BilledCall, abort: CallAbort): Promise<boolean> {
  try {
    verifiedKey(await deps.requestPathCache.keyByHash(batch.keyHash), batch.keyHash);
    pickModel(await deps.requestPathCache.modelMatches(call.clientModel), call.clientModel);
    if (await deps.detachedCalls.walletSpent(call.caller.orgId)) throw insufficientFunds();
    return true;
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    // A store that cannot be read now: the line goes on as admitted.
    if (error.status >= 500) return true;
    abort.abort(error);
    return false;
  }
}

/**
 * The outcome of a line stopped before its answer, billed `tokens`: its stop's error, or its
 * batch's end; a spent wallet's (402) is `dry`, as a line the wallet could not hold, so the rest of
 * its batch ends as error lines too.
 */
function stoppedOutcome(abort: CallAbort, tokens: LineResult['tokens']): LineOutcome {
  const { reason } = abort;
  if (reason instanceof GatewayError && reason.status === 402) return { kind: 'dry', result: dryLine(reason, tokens) };
  const result = reason instanceof GatewayError ? errorLine(reason) : stoppedLine();
  return { kind: 'result', result: { ...result, tokens } };
}

/** The line's call to the engine, its answer read and billed. */
async function sendLine(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  endpoint: BilledEndpoint,
  abort: CallAbort,
): Promise<LineOutcome> {
  const clearTimer = abortAfter(abort, deps.config.upstreamTimeoutMs);
  let target: UpstreamTarget | undefined;
  // The answer read from the engine's stream: what a line cut or failed mid-answer is billed.
  let relay: JsonRelay | undefined;
  try {
    call.upstreamAt = performance.now();
    const sent = await sendJson(deps, call, protocol, endpoint, { path: endpoint.path, abort }, (attempt) => {
      relay = attempt;
    });
    target = sent.target;
    // The answer the route gives: a Responses line's is the Response, kept as the route keeps it.
    const { usage, reported, written } = await writtenJson(sent.read, endpoint, protocol, call);
    await settle(deps, call, { usage, usageSource: reported ? 'upstream' : 'estimated', status: 200, streamed: false });
    const billed = chargeFor(usage, call, call.price).usage;
    const tokens = { ...NO_TOKENS, ...billed };
    const response = typeof written === 'string' ? written : written.toString('utf8');
    return { kind: 'result', result: { status: 'done', statusCode: 200, response, error: null, tokens } };
  } catch (error) {
    if (abort.aborted) {
      // A cut line shows the tokens it is billed (held to its bounds): what the engine generated.
      const usage = await settleCut(deps, call, protocol.estimate(null).promptTokens, false, relay?.assembled.state);
      return stoppedOutcome(abort, { ...NO_TOKENS, ...chargeFor(usage, call, call.price).usage });
    }
    // An engine that failed, before answering or mid-answer (another replica tried first): billed
    // nothing, as its error line shows (docs/decisions.md).
    await abandon(deps, call);
    if (error instanceof GatewayError) return { kind: 'result', result: errorLine(error) };
    throw error;
  } finally {
    clearTimer();
    target?.release();
  }
}

/** The line's request as `authorize` would have made it, its price the batch price. */
async function lineRequest(
  deps: BilledDeps,
  batch: BatchRow,
  line: RunnableLine,
  endpoint: BilledEndpoint,
): Promise<AuthorizedRequest> {
  const startedAt = performance.now();
  const body = JSON.parse(line.body) as Json;
  // A line is answered as JSON: its result is one line of the output file. A Responses line that
  // asks for a stream or a background run is an error line (OpenAI's batch lines are not streamed).
  if (endpoint.name === 'responses') refuseUnbatchable(body);
  else {
    delete body.stream;
    delete body.stream_options;
  }
  const caller = verifiedKey(await deps.requestPathCache.keyByHash(batch.keyHash), batch.keyHash);
  const modelName = requestedModelName(body.model);
  const { model, price } = pickModel(await deps.requestPathCache.modelMatches(modelName), modelName);
  if (model.taskType !== endpoint.task)
    throw new GatewayError('model_not_found', `The model \`${modelName}\` cannot serve ${line.url}.`);
  endpoint.validate(body, deps.config);
  if (!price) throw new GatewayError('pricing_unavailable', 'This model has no price set.');
  const raw = Buffer.from(JSON.stringify(body));
  return {
    requestId: line.requestId,
    task: endpoint.task,
    endpoint: endpoint.name,
    caller,
    model,
    price: atBatchPrice(price),
    clientModel: modelName,
    projectId: batch.projectId,
    band: 'batch',
    body,
    rawBody: raw,
    bodyBytes: raw.length,
    startedAt,
    batchId: batch.id,
  };
}

/** A Responses line's `stream: true` or `background: true`: a batch answers each line once, as JSON. */
function refuseUnbatchable(body: Json): void {
  const asked = (['stream', 'background'] as const).filter((field) => body[field] === true);
  if (asked.length > 0)
    throw invalid(
      asked.map((field) => ({ field, message: 'is not run in a batch: a line is answered once, as JSON' })),
    );
}

/** The model's price row with its batch prices in the places every charge reads (`money.ts`). */
function atBatchPrice(price: PriceRow): PriceRow {
  const batch = batchPrice(price);
  return {
    ...price,
    inputPerToken: batch.inputPerToken,
    cachedInputPerToken: batch.cachedInputPerToken ?? null,
    outputPerToken: batch.outputPerToken,
  };
}

/** A line the gateway or the engine refused: its error as the client would have had it. */
function errorLine(error: GatewayError): LineResult {
  return {
    status: 'failed',
    statusCode: error.status,
    response: JSON.stringify(envelopeOf(error)),
    error: null,
    tokens: NO_TOKENS,
  };
}

/** A line its batch stopped (cancelled, or its window passed) before it had an answer. */
function stoppedLine(): LineResult {
  const error = { code: 'batch_cancelled', message: 'The batch stopped before this request was answered.' };
  return { status: 'failed', statusCode: null, response: null, error, tokens: NO_TOKENS };
}

/**
 * A line the wallet could not hold, or stopped when it was spent (billed `tokens`, what the engine
 * had used by then): `insufficient_quota`, as OpenAI names a spent account.
 */
export function dryLine(error?: GatewayError, tokens: LineResult['tokens'] = NO_TOKENS): LineResult {
  const message = error?.message ?? "The organization's wallet could not pay for this request.";
  return {
    status: 'failed',
    statusCode: null,
    response: null,
    error: { code: 'insufficient_quota', message },
    tokens,
  };
}
