import type { Logger } from '../../shared/http/log.js';
import type { Server } from './server-list.js';

// A server in and out of rotation by its /health.

const HEALTH_TIMEOUT_MS = 2_000;

export interface HealthOptions {
  log: Logger;
  /** Failed health checks in a row before a ready replica leaves rotation (3). */
  unhealthyAfter?: number;
}

/**
 * A starting or unhealthy server enters rotation on a 200 from /health; a ready one leaves it after
 * `unhealthyAfter` failures in a row.
 */
export async function checkServer(server: Server, model: string, options: HealthOptions): Promise<void> {
  const healthy = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }).then(
    async (response) => {
      await response.body?.cancel();
      return response.status === 200;
    },
    () => false,
  );
  if (healthy) {
    server.failures = 0;
    server.kind.probe();
    if (server.state !== 'ready') {
      server.state = 'ready';
      server.since = Date.now();
      options.log.info('engine server ready', { model, replica: server.id });
    }
    return;
  }
  server.failures += 1;
  if (server.state === 'ready' && server.failures >= (options.unhealthyAfter ?? 3)) {
    server.state = 'unhealthy';
    options.log.warn('engine server stopped answering; out of rotation', { model, replica: server.id });
  }
}
