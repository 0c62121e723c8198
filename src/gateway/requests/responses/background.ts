import { FINISHED_STATUSES } from '../../stored-responses/background-types.js';
import type { Context } from 'hono';
import { pickModel } from '../../catalog/service.js';
import { isBand } from '../../flow/bands.js';
import { verifiedKey } from '../../keys/caller.js';
import type { BackgroundRequest, BackgroundRow, BackgroundStore } from '../../stored-responses/background-store.js';
import type { GatewayEnv } from '../../../shared/http/context.js';
import { replicaId } from '../../../shared/db/lease.js';
import { GatewayError } from '../../../shared/http/errors.js';
import { describeError, type Logger } from '../../../shared/http/log.js';
import { keyHeaderOf } from '../auth.js';
import { admitCall } from '../admit.js';
import type { AuthorizedRequest, BilledCall } from '../authorize.js';
import type { BackgroundQueue, QueuedCall } from '../background-queue.js';
import { abandon, settle } from '../billed-call.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from '../endpoint.js';
import { chargeFor } from '../../billing/holds.js';
import type { TokenUsage } from '../../billing/token-usage.js';
import { responsesUsage } from './answer.js';
import { admittedCharge, chargeLeftBehind, cutUsage } from './background-charge.js';
import { streamFromStore } from './background-events.js';
import { keptOutput } from './background-output.js';
import { type BackgroundJob, failedResponse, responseIn, runJob } from './background-run.js';

type Json = Record<string, unknown>;

/** How often a cancel looks whether the job has stopped. */
const CANCEL_POLL_MS = 100;
/** How often a replica running jobs reads whether one was cancelled on another replica. */
const CANCEL_WATCH_MS = 250;

/**
 * Background responses (`background: true` on `POST /v1/responses`): queued with their hold taken
 * and answered at once, run on this replica in flow control's background band
 * (`background-run.ts`), their leases renewed while they run, and the jobs of a replica that died
 * taken over: run again when the engine was never sent them, else failed and billed what they
 * generated (the same request id: one charge whichever replica bills it). `start` begins the loop;
 * `stop` ends it.
 *
 * @example
 * routes.post('/', (c) => serveBilled(c, deps, endpoint, deps.backgroundResponses));
 */
export class BackgroundResponses implements BackgroundQueue {
  /** This replica, as `claimed_by` names it. */
  readonly replica = replicaId();
  /** The jobs this replica runs, by id: each one's cancel. */
  private readonly running = new Map<string, () => void>();
  private timer: NodeJS.Timeout | null = null;
  private cancelWatch: NodeJS.Timeout | null = null;
  private ticking = false;

  constructor(
    readonly store: BackgroundStore,
    private readonly log: Logger,
    /**
     * Which of this replica's running jobs were asked to cancel elsewhere
     * (`background-cancels.ts`).
     */
    private readonly cancelsRequested: (replica: string, ids: string[]) => Promise<string[]> = async () => [],
  ) {}

  wants(request: AuthorizedRequest): boolean {
    return request.endpoint === 'responses' && request.body.background === true;
  }

  async queue(c: Context<GatewayEnv>, deps: BilledDeps, queued: QueuedCall): Promise<Response> {
    const { call, protocol, path, streamed } = queued;
    const id = protocol.responseId!;
    const job: BackgroundJob = { id, call, protocol, streamed, path };
    const response = responseIn(job, 'queued');
    const request: BackgroundRequest = {
      body: call.body,
      clientModel: call.clientModel,
      projectId: call.projectId,
      band: call.band,
      admitted: admittedCharge(call),
    };
    const keyHash = deps.keys.secretHashOf(keyHeaderOf(c));
    try {
      const { orgId, id: keyId } = call.caller;
      await this.store.enqueue(
        { id, orgId, keyId, keyHash, requestId: call.requestId, request, response, streamed },
        this.replica,
      );
    } catch (error) {
      await abandon(deps, call);
      throw error;
    }
    this.run(deps, job);
    if (streamed) return streamFromStore(c, this.store, { orgId: call.caller.orgId, id }, -1);
    return c.json(response);
  }

  /**
   * Cancels the organization's job wherever it runs (here at once; on another replica within
   * `CANCEL_WATCH_MS` and a read, or at its next renewal), and answers its response once it has
   * stopped. Null for an unknown id or another organization's; a 400 for one that finished other
   * than cancelled, as OpenAI answers.
   */
  async cancel(orgId: string, id: string): Promise<Json | null> {
    const row = await this.store.get(orgId, id);
    if (!row) return null;
    if (row.status === 'cancelled') return JSON.parse(row.response) as Json;
    if (FINISHED_STATUSES.has(row.status))
      throw new GatewayError('invalid_request', `Cannot cancel a response that is ${row.status}.`);
    const local = this.running.get(id);
    if (local) local();
    else await this.store.requestCancel(orgId, id);
    const deadline = Date.now() + this.store.settings.backgroundLeaseMs + 5_000;
    for (;;) {
      const now = await this.store.get(orgId, id);
      if (!now) return null;
      if (FINISHED_STATUSES.has(now.status) || Date.now() > deadline) return JSON.parse(now.response) as Json;
      await new Promise((resolve) => setTimeout(resolve, CANCEL_POLL_MS));
    }
  }

  /** Renews this replica's leases and takes over expired ones, every third of a lease, from now. */
  start(deps: BilledDeps, endpoint: BilledEndpoint): void {
    const every = Math.max(100, Math.floor(this.store.settings.backgroundLeaseMs / 3));
    this.timer = setInterval(() => void this.tick(deps, endpoint), every);
    this.timer.unref();
    // A cancel on another replica reaches the engine within a second, not at the next renewal.
    this.cancelWatch = setInterval(() => void this.watchCancels(), CANCEL_WATCH_MS);
    this.cancelWatch.unref();
    void this.tick(deps, endpoint);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.cancelWatch) clearInterval(this.cancelWatch);
    this.timer = null;
    this.cancelWatch = null;
  }

  private async watchCancels(): Promise<void> {
    if (this.running.size === 0) return;
    try {
      for (const id of await this.cancelsRequested(this.replica, [...this.running.keys()])) this.running.get(id)?.();
    } catch (error) {
      // The lease's renewal reads the same flag: a cancel is late, never lost.
      this.log.warn('background responses: cancels could not be read', describeError(error));
    }
  }

  /** How many jobs this replica runs now. */
  get size(): number {
    return this.running.size;
  }

  private run(deps: BilledDeps, job: BackgroundJob): void {
    void runJob({ deps, store: this.store, replica: this.replica }, job, (cancel) => this.running.set(job.id, cancel))
      .catch((error: unknown) =>
        this.log.error('a background response failed', { id: job.id, ...describeError(error) }),
      )
      .finally(() => this.running.delete(job.id));
  }

  private async tick(deps: BilledDeps, endpoint: BilledEndpoint): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const cancels = await this.store.renew(this.replica, [...this.running.keys()]);
      for (const id of cancels) this.running.get(id)?.();
      for (const row of await this.store.claimExpired(this.replica)) await this.takeOver(deps, endpoint, row);
    } catch (error) {
      this.log.warn('background responses: a lease round failed', describeError(error));
    } finally {
      this.ticking = false;
    }
  }

  /**
   * A job whose replica's lease ran out, now this replica's: admitted again under the same request
   * id, then run again (the engine never had it) or billed what it generated and failed. A refusal
   * that may pass (limits, a busy store) leaves it for the next round, once this claim runs out;
   * one for good fails it, billed what it generated at its first admission's price.
   */
  private async takeOver(deps: BilledDeps, endpoint: BilledEndpoint, row: BackgroundRow): Promise<void> {
    let call: BilledCall;
    let protocol: ProtocolCall;
    try {
      ({ call, protocol } = await admitCall(deps, await reauthorized(deps, row), endpoint));
    } catch (error) {
      const passing = error instanceof GatewayError && (error.status === 429 || error.status >= 500);
      this.log.warn('a background response could not be taken over', { id: row.id, ...describeError(error) });
      if (passing) return;
      // The engine had it: what it generated is billed all the same, once.
      const billed = row.reachedEngine ? await chargeLeftBehind(deps, row, cutUsage(row)) : null;
      await this.failTakenOver(row, billed);
      return;
    }
    if (!row.reachedEngine) {
      this.log.info('a background response is run again: its replica stopped before sending it', { id: row.id });
      this.run(deps, { id: row.id, call, protocol, streamed: row.streamed, path: endpoint.path });
      return;
    }
    const usage = cutUsage(row);
    this.log.warn('a background response failed with its replica: billed what it generated', { id: row.id, ...usage });
    await settle(deps, call, { usage, usageSource: 'estimated', status: 500, streamed: true });
    await this.failTakenOver(row, chargeFor(usage, call, call.price).usage);
  }

  /**
   * Fails a job taken over, with the output its kept events show and the usage it was billed
   * (null: none); a streamed one's kept events end with `response.failed` first, so a reader's
   * stream ends as the Responses stream does, not on a delta.
   */
  private async failTakenOver(row: BackgroundRow, billed: TokenUsage | null): Promise<void> {
    const response = failedResponse(JSON.parse(row.response) as Json);
    response.output = await keptOutput(this.store, row.id);
    if (billed) response.usage = responsesUsage(billed);
    if (row.streamed) {
      const sequence = (await this.store.lastSequence(row.id)) + 1;
      const data = JSON.stringify({ type: 'response.failed', sequence_number: sequence, response });
      await this.store.appendEvents(row.id, [[sequence, `event: response.failed\ndata: ${data}\n\n`]]);
    }
    await this.store.finish(row.id, this.replica, 'failed', response);
  }
}

/**
 * The request of a job as it was queued, its key, model and price found again as the request path
 * finds them.
 */
async function reauthorized(deps: BilledDeps, row: BackgroundRow): Promise<AuthorizedRequest> {
  const queued = JSON.parse(row.request) as BackgroundRequest;
  const caller = verifiedKey(await deps.requestPathCache.keyByHash(row.keyHash), row.keyHash);
  const { model, price } = pickModel(await deps.requestPathCache.modelMatches(queued.clientModel), queued.clientModel);
  if (!price) throw new GatewayError('pricing_unavailable', 'This model has no price set.');
  const raw = Buffer.from(JSON.stringify(queued.body));
  return {
    requestId: row.requestId,
    task: 'chat',
    endpoint: 'responses',
    caller,
    model,
    price,
    clientModel: queued.clientModel,
    projectId: queued.projectId,
    band: isBand(queued.band) ? queued.band : 'background',
    body: queued.body,
    rawBody: raw,
    bodyBytes: raw.length,
    startedAt: performance.now(),
    responseId: row.id,
  };
}
