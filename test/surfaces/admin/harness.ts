import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { loadConfig } from '../../../src/config/index.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import type { Fleet } from '../../../src/gateway/engines/fleet.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { createServices, type Services } from '../../../src/services.js';
import { createApp } from '../../../src/app.js';
import type { Hono } from 'hono';
import type { GatewayEnv } from '../../../src/shared/http/context.js';

export const ADMIN_TOKEN = 'test-operator-token-0123456789';

/**
 * Real services over an in-memory PGlite store, and an app that mounts the
 * admin routes the way the gateway does.
 *
 * @example
 * const h = await startAdmin();
 * const res = await h.call('GET', '/orgs');
 */
export async function startAdmin(
  env: Record<string, string> = {},
): Promise<{ app: Hono<GatewayEnv>; store: Store; services: Services; call: Call }> {
  const config = loadConfig({ TOLLGATE_DATA_DIR: 'memory://', ...env });
  const store = await openStore({ dataDir: config.dataDir });
  const log = createLogger('silent');
  const fleet: Fleet = {
    acquire() {
      throw new Error('unused');
    },
    whenReady: () => null,
    freeSlots: () => null,
    schedulesByPriority: () => false,
    waitingInGateway: () => {},
    engines: () => [],
    status: () => [],
    simulatorUrl: null,
    close: async () => {},
  };
  const services = createServices({
    config,
    db: store.db,
    log,
    fleet,
    adminToken: ADMIN_TOKEN,
    journal: await ChargeJournal.open(null),
  });
  const app = createApp(services);
  const call: Call = async (method, path, body, headers = {}) => {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    const res = await app.request(`/admin/v1${path}`, init);
    return { status: res.status, headers: Object.fromEntries(res.headers), body: (await res.json()) as any };
  };
  return { app, store, services, call };
}

export type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; headers: Record<string, string>; body: any }>;
