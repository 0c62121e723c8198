import { purgeRequestData } from '../gateway/billing/request-data.js';
import { keepUsageMonths } from '../gateway/billing/usage-partitions.js';
import { copyLegacyPackages } from '../platform/stacks/package-blobs.js';
import { responsesEndpoint } from '../gateway/requests/responses/index.js';
import { STORE_TIMEOUT_MS } from '../shared/db/timeout.js';
import { describeError, type Logger } from '../shared/http/log.js';
import type { Services } from '../services.js';

/**
 * How often stored request data and stored Responses past their retention are purged (expired holds
 * are the limits gate's: `admission/gate-upkeep.ts`).
 */
const SWEEP_INTERVAL_MS = 60_000;

/**
 * Starts what runs beside the requests, each with its stop in `closers`
 * (stopped in reverse): the charge writer, the limits' upkeep, the catalog
 * poll, the sweeper of request data and stored Responses, the run workers, the clusters' keys on
 * their nodes, the public hosts' refresh.
 *
 * @example
 * await startLoops(services, log, closers); // in startGateway, once the services are made
 */
export async function startLoops(services: Services, log: Logger, closers: Array<() => Promise<void>>): Promise<void> {
  const { config } = services;
  services.applier.start();
  closers.unshift(async () => {
    // What is journaled is written now if the store takes it; else it waits in the journal for the
    // next start.
    await services.applier.settled(STORE_TIMEOUT_MS);
    await services.applier.stop();
  });
  await services.gateKeeper
    .recover()
    .catch((error: Error) =>
      log.error('could not report earlier charges to the limits store', { detail: error.message }),
    );
  services.gateKeeper.start();
  closers.unshift(async () => services.gateKeeper.stop());
  services.requestPathCache.start();
  closers.unshift(async () => services.requestPathCache.stop());
  // Stored bodies, stored Responses and conversations outlive their retention; any replica may
  // clean up.
  const sweeper = setInterval(() => {
    purgeRequestData(services.db, config.requestData.retentionDays).catch((error: unknown) =>
      log.warn('purging old request data failed', { detail: (error as Error).message }),
    );
    services.responseStore
      .purgeExpired(new Date())
      .catch((error: unknown) =>
        log.warn('purging expired stored responses failed', { detail: (error as Error).message }),
      );
    services.backgroundResponses.store
      .purgeExpired(new Date())
      .catch((error: unknown) =>
        log.warn('purging expired background responses failed', { detail: (error as Error).message }),
      );
    services.conversationStore
      .purgeExpired(new Date())
      .catch((error: unknown) =>
        log.warn('purging expired conversations failed', { detail: (error as Error).message }),
      );
    // An upload whose process died mid-file left part of a blob: gone a day later (no upload lasts
    // that long).
    services.blobs
      .sweepUnfinished(new Date(Date.now() - 24 * 3_600_000))
      .catch((error: unknown) => log.warn('sweeping unfinished blobs failed', { detail: (error as Error).message }));
  }, SWEEP_INTERVAL_MS);
  sweeper.unref();
  closers.unshift(async () => clearInterval(sweeper));
  // The usage records' months: at start and daily; any replica may, they take turns.
  closers.unshift(await keepUsageMonths(services.db, config.usageDetailRetentionMonths, log));
  if (config.runs.sandbox === 'none') {
    log.warn(
      "TOLLGATE_RUN_SANDBOX=none: stacks run unsandboxed, as this gateway's user on this host; any user who can add a stack can read its files and secrets and reach its network",
    );
  }
  startDeferredWork(services, closers);
  // Rows' packages from before the blob store: copied there before runs start (else read as are).
  await copyLegacyPackages(services.db, services.blobs, log);
  services.runWorker.start();
  closers.unshift(() => services.runWorker.stop());
  await services.clusterIdentity
    .sealClearKeys()
    .catch((error: unknown) =>
      log.warn('cluster keys stored in clear could not be sealed; the next start tries again', describeError(error)),
    );
  // Clusters' keys on their nodes: installs and removals that are due, retried with backoff, by
  // whichever process looks first.
  services.clusterIdentity.start();
  closers.unshift(() => services.clusterIdentity.stop());
  services.publicHosts.start();
  closers.unshift(async () => services.publicHosts.stop());
}

/**
 * The billed work that runs after its answer: background responses (this replica's leases renewed,
 * a dead replica's jobs taken over) and batches (this replica's share of their lines claimed and
 * run, their files written).
 */
function startDeferredWork(services: Services, closers: Array<() => Promise<void>>): void {
  const responses = responsesEndpoint({
    store: services.responseStore,
    conversations: services.conversationStore,
    log: services.log,
  });
  services.backgroundResponses.start(services, responses);
  closers.unshift(() => services.backgroundResponses.stop());
  services.batches.start(services, responses);
  closers.unshift(() => services.batches.stop());
}
