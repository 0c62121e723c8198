import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { AdminDeps } from './deps.js';

/**
 * The fleet's flow control as this gateway replica sees it (`/admin/v1/flow`): per model, the
 * requests it has on the engines, the slots free beyond other gateways' requests, and who waits in
 * which band; the tokens each organization was served since it started (docs/fair-sharing.md).
 *
 * @example
 * admin.route('/flow', flowRoutes(deps));
 */
export function flowRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const flow = new Hono<GatewayEnv>();
  flow.get('/', (c) => {
    const snapshot = deps.flow.snapshot();
    return c.json({
      object: 'flow',
      enabled: deps.flow.settings.enabled,
      models: snapshot.models.map((model) => ({
        model: model.model,
        in_flight: model.inFlight,
        free_slots: model.freeSlots,
        waiting: model.waiting.map((w) => ({ band: w.band, org_id: w.orgId, requests: w.requests })),
      })),
      served: snapshot.served.map((s) => ({
        org_id: s.orgId,
        prompt_tokens: s.promptTokens,
        completion_tokens: s.completionTokens,
      })),
    });
  });
  return flow;
}
