import { streamSettlement } from '../../billing/settlement.js';
import { bandRank } from '../../flow/bands.js';
import { CallAbort } from '../../proxy/call-abort.js';
import { relaySse, type RelayOutcome } from '../../proxy/sse.js';
import type { BackgroundStatus, BackgroundStore } from '../../stored-responses/background-store.js';
import { describeError } from '../../../shared/http/log.js';
import type { BilledCall } from '../authorize.js';
import { abandon, settle, settleCut, streamCheckpoints } from '../billed-call.js';
import { abortAfter, type EngineAnswer, sendToEngine } from '../engine-call.js';
import { waitForEngines } from '../flow-wait.js';
import type { BilledDeps, ProtocolCall } from '../endpoint.js';
import { readEngineChunks, type StreamWriter } from '../stream-writer.js';
import { responseShell } from './answer.js';
import { EventKeeper } from './background-events.js';

type Json = Record<string, unknown>;

/** One background response, admitted (its hold taken) and claimed by this replica. */
export interface BackgroundJob {
  id: string;
  call: BilledCall;
  protocol: ProtocolCall;
  /** Whether its client asked for a stream: its events are kept for `GET …?stream=true`. */
  streamed: boolean;
  /** Its endpoint's path on the engine (`BilledEndpoint.path`). */
  path: string;
}

/** What a job runs with: the billed path's services, where jobs are kept, and who this replica is. */
export interface JobContext {
  deps: BilledDeps;
  store: BackgroundStore;
  replica: string;
}

/** The response as `GET` shows it before the engine's answer: the request's echo, in `status`. */
export function responseIn(job: Pick<BackgroundJob, 'id' | 'call'>, status: BackgroundStatus): Json {
  const { call } = job;
  return { ...responseShell(call.body, job.id, call.clientModel, Math.floor(Date.now() / 1000)), status };
}

/**
 * Runs one background response to its end, as `serveBilled` runs a stream, with no client: it waits
 * in flow control's background band (or its key's, when lower), goes to the engine (marked as sent
 * first, so no replica ever sends it twice), keeps its events and its count as they come, and is
 * billed by `settle` exactly as a foreground stream, or given everything back when nothing was
 * used. `cancel` (given to `running` at once) stops it wherever it is: the engine's request is
 * aborted.
 */
export async function runJob(ctx: JobContext, job: BackgroundJob, running: (cancel: () => void) => void) {
  const run = new JobRun(ctx, job);
  running(() => run.cancel());
  // Stopped as a cancel is when its key is revoked, its model disabled or its wallet spent, on any
  // replica.
  const { call } = job;
  const untrack = ctx.deps.detachedCalls.track({
    orgId: call.caller.orgId,
    keyId: call.caller.id,
    modelId: call.model.id,
    stop: () => run.cancel(),
  });
  try {
    await run.run();
  } finally {
    untrack();
  }
}

/** One job's run: its abort, whether it was cancelled, and how to stop it wherever it is. */
class JobRun {
  private readonly abort = new CallAbort();
  private cancelled = false;
  private leave: (() => void) | null = null;
  private stopRelay: (() => Promise<void>) | null = null;
  private readonly promptEstimate: () => number;

  constructor(
    private readonly ctx: JobContext,
    private readonly job: BackgroundJob,
  ) {
    this.promptEstimate = () => job.protocol.estimate(null).promptTokens;
  }

  cancel(): void {
    this.cancelled = true;
    this.leave?.();
    this.abort.abort();
    void this.stopRelay?.();
  }

  async run(): Promise<void> {
    const { deps, store, replica } = this.ctx;
    const { call, protocol, id } = this.job;
    if (bandRank(call.band) < bandRank('background')) call.band = 'background';
    call.trace = undefined;
    const cancelled = () => this.cancelled;
    if (!(await waitForEngines(deps, call, protocol, cancelled, (leave) => (this.leave = leave)))) {
      await abandon(deps, call);
      await store.finish(id, replica, 'cancelled', responseIn(this.job, 'cancelled'));
      return;
    }
    if (!(await store.reachedEngine(id, replica, responseIn(this.job, 'in_progress'), this.promptEstimate()))) {
      // Another replica took it over (this one's lease ran out): it is that one's now.
      await abandon(deps, call);
      return;
    }
    const clearTimer = abortAfter(this.abort, deps.config.upstreamTimeoutMs);
    try {
      const sent = await this.send();
      if (sent) await this.relay(sent, clearTimer);
    } finally {
      clearTimer();
    }
  }

  /** The engine's answer, or null when it failed before one (billed and recorded here). */
  private async send(): Promise<EngineAnswer | null> {
    const { deps, store, replica } = this.ctx;
    const { call, protocol, id, path } = this.job;
    try {
      call.upstreamAt = performance.now();
      return await sendToEngine(deps, call, protocol, { path, abort: this.abort });
    } catch {
      if (this.cancelled) {
        await settleCut(deps, call, this.promptEstimate(), true);
        await store.finish(id, replica, 'cancelled', responseIn(this.job, 'cancelled'));
      } else {
        await abandon(deps, call);
        await store.finish(id, replica, 'failed', failedResponse(responseIn(this.job, 'failed')));
      }
      return null;
    }
  }

  /**
   * Relays the engine's stream into the store, settles it as `relayBilledStream` does, and records
   * how it ended.
   */
  private async relay(sent: EngineAnswer, clearTimer: () => void) {
    const { deps, store, replica } = this.ctx;
    const { call, protocol, id } = this.job;
    call.answeredAt = performance.now();
    const writer = protocol.stream!(call.bounds);
    const keeper = new EventKeeper({ store, replica, log: deps.log }, this.job, writer);
    let outcome: RelayOutcome = 'upstream_failed';
    // Cancelled or not as it stood when the engine's stream ended: a later cancel is too late (its
    // events, its record and its conversation tell how it ended already).
    let cancelledAtEnd: boolean | null = null;
    const checkpoints = streamCheckpoints(deps, call, this.promptEstimate);
    const rewrite = readEngineChunks(writer);
    const relayed = relaySse({
      upstream: sent.response.body,
      onData: (data) => {
        const forwarded = rewrite(data);
        checkpoints.saw(writer.state);
        return forwarded;
      },
      abortUpstream: () => this.abort.abort(),
      events: writer.events,
      onEnd: async (ended) => {
        outcome = ended;
        cancelledAtEnd = this.cancelled;
        this.stopRelay = null; // its last events are read and kept whatever comes now
        sent.target.release();
        clearTimer();
        if (writer.ended) await writer.ended(cancelledAtEnd ? 'client_closed' : ended);
        const counted = writer.state.usage ? null : await sent.response.countPrompt?.();
        const prompt = typeof counted === 'number' ? () => counted : this.promptEstimate;
        await settle(deps, call, streamSettlement(writer.state, ended, prompt, null));
      },
    });
    const reader = relayed.getReader();
    this.stopRelay = () => reader.cancel();
    if (this.cancelled) await reader.cancel();
    try {
      await keeper.read(reader);
    } catch (error) {
      deps.log.warn('a background response stopped reading its stream', { id, ...describeError(error) });
      await reader.cancel().catch(() => {});
    }
    await keeper.flush();
    const { status, response } = ending(writer, outcome, cancelledAtEnd ?? this.cancelled);
    await store.finish(id, replica, status, response);
  }
}

/** How a job that reached the engine ended, and its response as `GET` shows it from now on. */
function ending(
  writer: StreamWriter,
  outcome: RelayOutcome,
  cancelled: boolean,
): { status: BackgroundStatus; response: Json } {
  const response = writer.snapshot!();
  if (cancelled) return { status: 'cancelled', response: { ...response, status: 'cancelled' } };
  if (outcome === 'done' && !writer.state.failed) {
    const status: BackgroundStatus = response.status === 'incomplete' ? 'incomplete' : 'completed';
    return { status, response };
  }
  return { status: 'failed', response: failedResponse(response) };
}

/**
 * A response the engine broke off, or a replica died running: `failed`, with the output written so
 * far.
 */
export function failedResponse(response: Json): Json {
  const error = { code: 'server_error', message: 'The model server stopped before finishing this response.' };
  return { ...response, status: 'failed', error };
}
