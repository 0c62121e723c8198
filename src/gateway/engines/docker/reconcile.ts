import type Docker from 'dockerode';
import { createContainer, removeContainer } from './containers.js';
import { checkHealth } from './health.js';
import { gpusOfLabels, type HostState, listHost } from './hosts.js';
import { placeReplica } from './placement.js';
import { LABELS } from './spec.js';
import { type EngineState, loadsScraped, type Replica, scrapedLoad, trackReplica } from './state.js';

const MAX_BACKOFF_MS = 60_000;
/**
 * A drain waits at most this long for the replica's requests (seen by other gateways through its
 * metrics) to end.
 */
const DRAIN_TIMEOUT_MS = 60_000;
/**
 * A container left created but not started this long is dead (its starter died between the two
 * calls).
 */
const CREATED_GRACE_MS = 30_000;

interface Listed {
  host: HostState;
  info: Docker.ContainerInfo;
}

/**
 * One pass: make the containers on every host match the definition, then
 * check every replica's health. Creates missing replicas where
 * `placement.ts` puts them, adopts running ones after a gateway restart,
 * replaces dead ones with back-off (1 s doubling to 60 s), drains and then
 * removes extra or outdated ones, and forgets the replicas of a host that
 * stopped answering, so they are placed elsewhere.
 */
export async function reconcile(state: EngineState): Promise<void> {
  const { definition, options } = state;
  const listings = await Promise.all(
    state.hosts.map((host) => listHost(host, options.unhealthyAfter ?? 3, state.placing, options.listTimeoutMs)),
  );
  // Read after listing: a container another gateway made after raising the count is never taken for
  // an extra one. The database away: keep the count and go on checking replicas' health.
  const stored = await state.scaleStore.read().catch((error: Error) => {
    options.log.warn('engine replica count could not be read; keeping the last one', {
      model: definition.model,
      detail: error.message,
    });
    return null;
  });
  state.desired = stored ?? state.desired;
  const ours: Listed[] = listings.flatMap((list, i) =>
    (list ?? [])
      .filter(
        (info) =>
          info.Labels[LABELS.deployment] === options.deployment && info.Labels[LABELS.engine] === definition.model,
      )
      .map((info) => ({ host: state.hosts[i]!, info })),
  );
  forgetLost(state, ours);
  // Tracked containers first: a host that comes back with a replica placed elsewhere meanwhile
  // loses its copy.
  ours.sort(
    (a, b) =>
      Number(state.replicas.get(indexOf(b.info))?.containerId === b.info.Id) -
      Number(state.replicas.get(indexOf(a.info))?.containerId === a.info.Id),
  );
  const seen = new Set<number>();
  for (const listed of ours) await settle(state, listed, seen);
  // Replicas on a host that missed this listing (not yet down) keep their place.
  for (const replica of state.replicas.values()) if (replica.index < state.desired) seen.add(replica.index);
  await createMissing(state, seen);
  await Promise.all([...state.replicas.values()].map((replica) => checkHealth(state, replica)));
}

const indexOf = (info: Docker.ContainerInfo) => Number(info.Labels[LABELS.replica]);

/**
 * Tracked replicas whose host is down, or whose container its host no longer lists, leave rotation
 * and tracking.
 */
function forgetLost(state: EngineState, ours: Listed[]): void {
  for (const [index, replica] of state.replicas) {
    const host = state.hosts.find((h) => h.definition.docker_host === replica.host);
    if (host?.down) {
      state.replicas.delete(index);
      state.options.log.warn('engine host not answering; its replica will be placed elsewhere', {
        model: state.definition.model,
        replica: index,
      });
    } else if (host?.failures === 0 && !ours.some((c) => c.info.Id === replica.containerId)) {
      state.replicas.delete(index);
    }
  }
}

/** One listed container: kept, adopted, drained, replaced or removed. */
async function settle(state: EngineState, { host, info }: Listed, seen: Set<number>): Promise<void> {
  const { definition, replicas, restarts, options } = state;
  const hostName = host.definition.docker_host;
  const index = indexOf(info);
  const tracked = replicas.get(index);
  const mine = tracked?.containerId === info.Id ? tracked : undefined;
  const current =
    Number.isInteger(index) && index < state.desired && info.Labels[LABELS.spec] === state.spec && !seen.has(index);
  if (!current) {
    // Extra replica (scaled down, or made from an older definition): drain it first.
    if (mine && !drained(state, mine)) {
      mine.state = 'draining';
      mine.drainingSince ??= Date.now();
      seen.add(index);
      return;
    }
    if (mine) replicas.delete(index);
    await removeContainer(state, hostName, info.Id, 'not wanted');
    return;
  }
  seen.add(index);
  // Created and not yet started: another gateway process (or this one) is starting it. Taking that
  // for a death made two gateways remove each other's new replica for ever.
  if (info.State === 'created' && Date.now() - info.Created * 1000 < CREATED_GRACE_MS) return;
  if (info.State !== 'running') {
    // Died: replace it, waiting longer after each death.
    replicas.delete(index);
    const previous = restarts.get(index) ?? { count: 0, notBefore: 0 };
    const delay = Math.min(1000 * 2 ** previous.count, MAX_BACKOFF_MS);
    restarts.set(index, { count: previous.count + 1, notBefore: Date.now() + delay });
    state.replaced.set(index, (state.replaced.get(index) ?? 0) + 1);
    options.log.warn('engine replica died; replacing it', {
      model: definition.model,
      replica: index,
      state: info.State,
      retryInMs: delay,
    });
    await removeContainer(state, hostName, info.Id, 'died');
    seen.delete(index);
    return;
  }
  // Wanted again while it drained (scaled back up): back into rotation once healthy.
  if (mine?.state === 'draining' && !mine.retiring) {
    mine.state = 'starting';
    mine.drainingSince = undefined;
  }
  if (!mine) {
    // Running but not known to this process: a gateway restart, or another gateway made it. Adopt
    // it.
    trackReplica(state, index, {
      id: info.Id,
      name: info.Names[0]?.replace(/^\//, ''),
      startedAt: info.Created * 1000,
      host: host.definition,
      gpus: gpusOfLabels(info.Labels),
    });
    options.log.info('engine replica adopted', {
      model: definition.model,
      replica: index,
      container: info.Id.slice(0, 12),
    });
  }
}

/**
 * A draining replica may go once this gateway has nothing in flight on it
 * and, when replicas' metrics are scraped, a scrape taken after the drain
 * began shows nothing running or waiting there (other gateways' requests).
 * Without a scraper only this gateway's requests are known.
 */
function drained(state: EngineState, replica: Replica): boolean {
  if (replica.inFlight > 0) return false;
  if (replica.drainingSince === undefined) return !loadsScraped(state);
  if (Date.now() - replica.drainingSince > DRAIN_TIMEOUT_MS) return true;
  const load = scrapedLoad(state, replica);
  if (!load) return true;
  return load.scrapedAt > replica.drainingSince && load.running + load.waiting === 0;
}

/** Starts the replicas the count asks for and no container serves, where they fit. */
async function createMissing(state: EngineState, seen: Set<number>): Promise<void> {
  const { definition, options } = state;
  for (let index = 0; index < state.desired; index++) {
    if (seen.has(index)) continue;
    const backoff = state.restarts.get(index);
    if (backoff && Date.now() < backoff.notBefore) continue;
    const placement = placeReplica(state);
    if (!placement) {
      options.log.warn('engine replica has no host to go to: none answering with enough GPUs free', {
        model: definition.model,
        replica: index,
      });
      return;
    }
    const track = (id: string) =>
      trackReplica(state, index, { id, startedAt: Date.now(), host: placement.host, gpus: placement.gpus });
    await createContainer(state, index, placement, track).catch((error: Error & { statusCode?: number }) => {
      state.placing.release(placement.host.docker_host, placement.gpus);
      // 409: another gateway sharing this engine created it first; the next pass adopts it.
      if (error.statusCode !== 409)
        options.log.error('engine replica could not start', {
          model: definition.model,
          replica: index,
          detail: error.message,
        });
    });
  }
}
