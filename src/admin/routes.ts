import { Hono } from 'hono';
import type { z } from 'zod';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import type { Services } from '../services.js';
import { operatorAuth } from './auth.js';
import { asConflict, orgsWithBalances } from './queries.js';
import * as body from './schemas.js';
import { readBody, readQuery } from '../http/validate.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES } from '../http/request.js';
import * as view from './views.js';
import { userView } from '../api/routes.js';
import { registerCostAdminRoutes } from './cost-routes.js';

/**
 * The management API, mounted by the app under `/admin/v1`. Every route needs
 * the operator token; errors are thrown as `GatewayError` and rendered by the
 * app's `onError`, so no handler writes error JSON itself.
 *
 * @example
 * app.route('/admin/v1', createAdminRoutes(services));
 */
export function createAdminRoutes(services: Services): Hono<GatewayEnv> {
  const { orgs, wallets, keys, catalog } = services;
  const currency = services.config.currency;
  const admin = new Hono<GatewayEnv>();
  admin.use('*', operatorAuth(services.adminToken), limitBody(MANAGEMENT_MAX_BODY_BYTES));

  const orgWithBalance = async (orgId: string) => view.orgView(await orgs.get(orgId), await wallets.balance(orgId), currency);
  const wallet = async (orgId: string, limit = 50) => {
    const [balance, ledger] = await Promise.all([wallets.balance(orgId), wallets.ledger(orgId, limit)]);
    return view.walletView(orgId, currency, balance, ledger);
  };

  admin.post('/orgs', async (c) => {
    const { name } = await readBody(c, body.createOrgBody);
    return c.json(view.orgView(await orgs.create(name), 0n, currency), 201);
  });
  admin.get('/orgs', async (c) => {
    const rows = await orgsWithBalances(services.db);
    return c.json(view.listOf(rows.map(({ org, balance }) => view.orgView(org, balance, currency))));
  });
  admin.get('/orgs/:orgId', async (c) => c.json(await orgWithBalance(c.req.param('orgId'))));

  admin.post('/orgs/:orgId/projects', async (c) => {
    const { name } = await readBody(c, body.createProjectBody);
    return c.json(view.projectView(await orgs.createProject(c.req.param('orgId'), name)), 201);
  });
  admin.get('/orgs/:orgId/projects', async (c) => {
    const org = await orgs.get(c.req.param('orgId'));
    return c.json(view.listOf((await orgs.listProjects(org.id)).map(view.projectView)));
  });

  admin.post('/orgs/:orgId/wallet/topups', async (c) => {
    const { amount, note } = await readBody(c, body.topupBody);
    await wallets.credit(c.req.param('orgId'), 'topup', amount, note);
    return c.json(await wallet(c.req.param('orgId')), 201);
  });
  admin.post('/orgs/:orgId/wallet/adjustments', async (c) => {
    const { amount, note } = await readBody(c, body.adjustmentBody);
    await wallets.credit(c.req.param('orgId'), 'adjustment', amount, note);
    return c.json(await wallet(c.req.param('orgId')), 201);
  });
  admin.get('/orgs/:orgId/wallet', async (c) => {
    const { limit } = readQuery(c, body.ledgerQuery);
    return c.json(await wallet(c.req.param('orgId'), limit));
  });

  admin.post('/orgs/:orgId/keys', async (c) => {
    const input = await readBody(c, body.createKeyBody);
    const orgId = c.req.param('orgId');
    // Every key acts as a person: the one named, or the organization's first owner.
    const userId = input.user_id ?? (await services.users.firstOwner(orgId))?.id ?? null;
    const { key, secret } = await keys.create({ ...keySettings(input), orgId, userId, name: input.name, expiry: input.expiry, projectId: input.project_id });
    c.header('Cache-Control', 'no-store'); // the only response that carries a secret
    return c.json({ ...view.keyView(key), secret }, 201);
  });
  admin.get('/orgs/:orgId/keys', async (c) => {
    const org = await orgs.get(c.req.param('orgId'));
    const now = new Date();
    return c.json(view.listOf((await keys.list(org.id)).map((key) => view.keyView(key, now))));
  });
  admin.post('/orgs/:orgId/users', async (c) => {
    const input = await readBody(c, body.createUserBody);
    const user = await services.users.create({ orgId: c.req.param('orgId'), name: input.name, email: input.email, password: input.password, role: input.role ?? 'member', platformAdmin: input.platform_admin });
    return c.json(userView(user), 201);
  });
  admin.get('/users', async (c) => {
    const { org_id: orgId } = readQuery(c, body.usersQuery);
    if (orgId) await orgs.get(orgId);
    const { rows } = await services.users.list(orgId ?? null, { offset: 0, limit: 10_000, sort: 'created_at' });
    return c.json(view.listOf(rows.map(userView)));
  });
  admin.get('/users/:id', async (c) => c.json(userView(await services.users.get(c.req.param('id')))));
  admin.patch('/users/:id', async (c) => {
    const input = await readBody(c, body.updateUserBody);
    const user = await services.users.update(c.req.param('id'), { name: input.name, email: input.email, password: input.password, role: input.role, platformAdmin: input.platform_admin });
    return c.json(userView(user));
  });
  admin.delete('/users/:id', async (c) => {
    await services.users.delete(c.req.param('id'));
    return c.body(null, 204);
  });

  admin.post('/profiles', async (c) => {
    const input = await readBody(c, body.createProfileBody);
    const profile = await services.clusters.addProfile({ name: input.name, gpusPerNode: input.gpus_per_node, gpuModel: input.gpu_model, cpuCores: input.cpu_cores, memoryGib: input.memory_gib });
    return c.json(view.profileView(profile), 201);
  });
  admin.get('/profiles', async (c) => c.json(view.listOf((await services.clusters.listProfiles()).map(view.profileView))));
  admin.post('/nodes', async (c) => {
    const input = await readBody(c, body.createNodeBody);
    return c.json(view.nodeView(await services.clusters.addNode(input)), 201);
  });
  admin.get('/nodes', async (c) => c.json(view.listOf((await services.clusters.listNodes()).map(view.nodeView))));
  registerCostAdminRoutes(admin, services);

  admin.get('/keys/:keyId', async (c) => c.json(view.keyView(await keys.get(c.req.param('keyId')))));
  admin.patch('/keys/:keyId', async (c) => {
    const changes = keySettings(await readBody(c, body.updateKeyBody));
    return c.json(view.keyView(await keys.update(c.req.param('keyId'), changes)));
  });
  admin.post('/keys/:keyId/revoke', async (c) => c.json(view.keyView(await keys.revoke(c.req.param('keyId')))));

  admin.get('/models', async (c) => {
    const { include_disabled } = readQuery(c, body.modelsQuery);
    const [models, prices] = await Promise.all([catalog.list({ includeDisabled: include_disabled === 'true' }), catalog.listPrices()]);
    const priceOf = new Map(prices.map((price) => [price.modelId, price]));
    return c.json(view.listOf(models.map((model) => view.modelView(model, priceOf.get(model.id) ?? null))));
  });
  admin.post('/models', async (c) => {
    const input = await readBody(c, body.createModelBody);
    const model = await asConflict(
      catalog.add({ id: input.id, displayName: input.display_name, hfRepoId: input.hf_repo_id, taskType: input.task_type, contextLength: input.context_length, enabled: input.enabled }),
      'A model with this id, display name or Hugging Face repo id already exists.',
    );
    return c.json(view.modelView(model, null), 201);
  });
  admin.patch('/models/:id{.+}', async (c) => {
    const input = await readBody(c, body.updateModelBody);
    const id = c.req.param('id');
    const changes = { displayName: input.display_name, contextLength: input.context_length, enabled: input.enabled };
    const model = await asConflict(catalog.update(id, definedOnly(changes)), 'Another model already uses this display name.');
    const price = (await catalog.listPrices()).find((p) => p.modelId === model.id) ?? null;
    return c.json(view.modelView(model, price));
  });

  admin.put('/prices/:modelId{.+}', async (c) => {
    const input = await readBody(c, body.setPriceBody);
    const price = await catalog.setPrice(c.req.param('modelId'), input.input_per_million, input.output_per_million);
    return c.json(view.priceView(price, currency));
  });
  admin.get('/prices', async (c) => c.json(view.listOf((await catalog.listPrices()).map((p) => view.priceView(p, currency)))));

  admin.get('/engines', (c) => c.json(view.listOf(services.fleet.status().map(view.engineView))));
  const managedEngine = (model: string) => {
    const engine = services.fleet.engines().find((e) => e.modelId === model);
    if (!engine) throw new GatewayError('not_found', `No engine serves model ${model}.`, { status: 404 });
    if (!engine.scale || !engine.restart) throw new GatewayError('conflict', `The ${engine.kind} engine of ${model} is not run by the gateway; only Docker engines scale and restart.`);
    return engine as Required<Pick<typeof engine, 'scale' | 'restart' | 'status'>>;
  };
  admin.post('/engines/:model{.+}/scale', async (c) => {
    const engine = managedEngine(c.req.param('model'));
    const { replicas } = await readBody(c, body.scaleEngineBody);
    await engine.scale(replicas);
    return c.json(view.engineView(engine.status()));
  });
  admin.post('/engines/:model{.+}/restart', async (c) => {
    const engine = managedEngine(c.req.param('model'));
    await engine.restart();
    return c.json(view.engineView(engine.status()));
  });

  return admin;
}

type KeyFields = z.output<typeof body.updateKeyBody>;

/** The API's snake_case key fields to the service's names; absent fields stay absent. */
function keySettings(input: KeyFields) {
  return definedOnly({
    name: input.name,
    requestsPerMinute: input.requests_per_minute,
    maxConcurrency: input.max_concurrency,
    tokensPerMinute: input.tokens_per_minute,
    monthlyTokens: input.monthly_tokens,
    storeRequestData: input.store_request_data,
    responseCache: input.response_cache,
  });
}

function definedOnly<T extends object>(source: T): Partial<T> {
  return Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined)) as Partial<T>;
}
