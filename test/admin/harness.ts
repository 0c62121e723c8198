import { Hono } from 'hono';
import { ChargeWriter } from '../../src/billing/charge-writer.js';
import { WalletService } from '../../src/billing/wallet.js';
import { CatalogService } from '../../src/catalog/service.js';
import { loadConfig } from '../../src/config.js';
import { openStore, type Store } from '../../src/db/client.js';
import type { Fleet } from '../../src/engines/fleet.js';
import { createLogger } from '../../src/http/log.js';
import { GatewayError } from '../../src/http/errors.js';
import { renderError } from '../../src/http/render.js';
import { KeyService } from '../../src/keys/service.js';
import { OrgService } from '../../src/platform/orgs.js';
import type { Services } from '../../src/services.js';
import { createAdminRoutes } from '../../src/admin/routes.js';

export const ADMIN_TOKEN = 'test-operator-token-0123456789';

/**
 * Real services over an in-memory PGlite store, and an app that mounts the
 * admin routes the way the gateway does.
 *
 * @example
 * const h = await startAdmin();
 * const res = await h.call('GET', '/orgs');
 */
export async function startAdmin(): Promise<{ app: Hono; store: Store; services: Services; call: Call }> {
  const config = loadConfig({ TOLLGATE_DATA_DIR: 'memory://' });
  const store = await openStore({ dataDir: config.dataDir });
  const log = createLogger('silent');
  const fleet: Fleet = {
    acquire() {
      throw new Error('unused');
    },
    engines: () => [],
    simulatorUrl: null,
    close: async () => {},
  };
  const wallets = new WalletService(store.db);
  const services: Services = {
    config,
    db: store.db,
    log,
    keys: new KeyService(store.db, config.keyPrefix),
    wallets,
    charges: new ChargeWriter(wallets, log),
    orgs: new OrgService(store.db),
    catalog: new CatalogService(store.db),
    fleet,
    adminToken: ADMIN_TOKEN,
  };
  const app = new Hono();
  app.route('/admin/v1', createAdminRoutes(services));
  app.notFound((c) => renderError(new GatewayError('not_found', `There is no route ${c.req.method} ${c.req.path}.`), c, log));
  app.onError((error, c) => renderError(error, c, log));
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

export type Call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; headers: Record<string, string>; body: any }>;
