import { canPlace } from './placement.js';
import { type EngineState, type Replica, scrapedLoad } from './state.js';

/**
 * A scale-down step is over once its replica is drained and removed; it gives up on that after this
 * long.
 */
const DOWN_STEP_TIMEOUT_MS = 120_000;

/**
 * The autoscaler, run after each reconcile pass of an engine whose
 * `max_replicas` is above its `min_replicas`. One step at a time: up by one
 * when requests waiting per ready replica stayed above
 * `autoscaling.waiting_per_replica` for `window_s` (and a GPU is free), down
 * by one when nothing waited and the running requests fit in one replica
 * fewer for `idle_cooldown_s`; from zero replicas at once when a request
 * waits for one. A step is taken through the scale store's lease (across
 * gateway processes) and held until its replica is ready, or drained and
 * removed; only then does the next window start.
 *
 * @example
 * await reconcile(state);
 * await autoscale(state);
 */
export async function autoscale(state: EngineState, now = Date.now()): Promise<void> {
  const memory = state.autoscale;
  if (memory.step) return continueStep(state, now);
  if (state.bounds.max <= state.bounds.min) return;
  if (state.desired !== memory.seenDesired) {
    // Another process (or an operator) changed the count: judge the new fleet afresh.
    memory.seenDesired = state.desired;
    memory.busySince = memory.idleSince = null;
  }
  const to = decide(state, now);
  if (to === null) return;
  const from = state.desired;
  const taken = await state.scaleStore.step(from, to, state.holder, leaseMs(state));
  memory.busySince = memory.idleSince = null;
  if (!taken) return;
  state.desired = memory.seenDesired = to;
  memory.step = { from, to, startedAt: now };
  state.options.log.info('engine autoscaled', { model: state.definition.model, from, to });
}

/** The count one step away that the load asks for, or null. */
function decide(state: EngineState, now: number): number | null {
  const { bounds, desired, autoscale: memory } = state;
  const settings = state.definition.autoscaling;
  if (desired === 0) return memory.coldWaiters > 0 && bounds.max > 0 ? 1 : null;
  const ready = [...state.replicas.values()].filter((r) => r.state === 'ready');
  const load = ready.map((r) => loadOf(state, r));
  // With flow control, a full fleet's extra requests wait in the gateway, not in the engines'
  // queues.
  const waiting = load.reduce((sum, l) => sum + l.waiting, 0) + memory.gatewayWaiting;
  const running = load.reduce((sum, l) => sum + l.running, 0);
  const perReplica = ready.length > 0 ? waiting / ready.length : memory.coldWaiters;
  memory.busySince = perReplica > settings.waiting_per_replica ? (memory.busySince ?? now) : null;
  if (
    memory.busySince !== null &&
    now - memory.busySince >= settings.window_s * 1000 &&
    desired < bounds.max &&
    canPlace(state)
  )
    return desired + 1;
  const couldLose =
    desired > bounds.min &&
    waiting === 0 &&
    memory.coldWaiters === 0 &&
    running <= (desired - 1) * settings.capacity_per_replica;
  memory.idleSince = couldLose ? (memory.idleSince ?? now) : null;
  if (memory.idleSince !== null && now - memory.idleSince >= settings.idle_cooldown_s * 1000) return desired - 1;
  return null;
}

/**
 * A replica's requests waiting and running: its scraped vLLM metrics when
 * there are some; else (no scraper yet, or the replica not scraped) this
 * gateway's own requests in flight on it, those beyond
 * `capacity_per_replica` counted as waiting, which sees only this process's
 * traffic.
 */
function loadOf(state: EngineState, replica: Replica): { waiting: number; running: number } {
  const scraped = scrapedLoad(state, replica);
  if (scraped) return { waiting: scraped.waiting, running: scraped.running };
  const capacity = state.definition.autoscaling.capacity_per_replica;
  return { waiting: Math.max(0, replica.inFlight - capacity), running: Math.min(replica.inFlight, capacity) };
}

/**
 * Keeps the lease while the step runs; gives it back once the new replica is ready, or the removed
 * one gone.
 */
async function continueStep(state: EngineState, now: number): Promise<void> {
  const step = state.autoscale.step!;
  const up = step.to > step.from;
  const finished =
    state.desired !== step.to ||
    (up
      ? state.replicas.get(step.to - 1)?.state === 'ready'
      : ![...state.replicas.values()].some((r) => r.index >= step.to)) ||
    now - step.startedAt > (up ? state.definition.startup_timeout_s * 1000 : DOWN_STEP_TIMEOUT_MS);
  if (!finished) {
    await state.scaleStore.renew(state.holder, leaseMs(state));
    return;
  }
  await state.scaleStore.release(state.holder);
  state.autoscale.step = null;
  state.autoscale.busySince = state.autoscale.idleSince = null;
}

/**
 * Long enough to outlast a few passes, short enough that a dead holder's lease frees the engine
 * soon.
 */
function leaseMs(state: EngineState): number {
  return Math.max(10_000, state.options.pollMs * 5);
}
