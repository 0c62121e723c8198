import type { Child } from 'hono/jsx';
import type { EngineStatus } from '../../gateway/engines/types.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';

const SCROLLS = '(scrolls sideways on a narrow screen)';
const share = (fraction: number | null | undefined) =>
  fraction === null || fraction === undefined ? '—' : `${Math.round(fraction * 100)}%`;

interface EnginesView {
  viewer: Viewer;
  engines: EngineStatus[];
  /** The models whose engine the gateway runs (Docker): these scale and restart here. */
  managed: ReadonlySet<string>;
  notice?: string;
  error?: string;
  /** The engine a refused form was for, and the count typed in it. */
  form: { model?: string; replicas?: string };
}

/**
 * Every engine with its replicas, as `/admin/v1/engines` has them, and the scale and restart forms
 * of the engines the gateway runs.
 */
export function OperatorEnginesPage({ viewer, engines, managed, notice, error, form }: EnginesView) {
  return (
    <Page title="Engines" user={viewer} current="operator">
      <OperatorNav here="engines" />
      <h1>Engines and replicas</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <p class="muted">
        What serves each model, as <code>GET /admin/v1/engines</code> and <code>tollgate engines list</code> show it.
        Queue, KV cache and prefix hits are each replica's own report at its last metrics scrape (Docker engines); a
        dash means it has none. The gateway scales and restarts the Docker engines it runs, as{' '}
        <code>tollgate engines scale</code> and <code>restart</code> do; the operator's own servers are scaled where
        they run.
      </p>
      {engines.length === 0 && <p class="muted">No engine is configured.</p>}
      {engines.map((engine, index) => (
        <EngineSection engine={engine}>
          {managed.has(engine.model) ? (
            <EngineActions
              engine={engine}
              index={index}
              csrf={viewer.csrf}
              replicas={form.model === engine.model ? form.replicas : undefined}
            />
          ) : (
            <p class="muted">Not run by the gateway: scale and restart it where it runs.</p>
          )}
        </EngineSection>
      ))}
    </Page>
  );
}

/** Scale a Docker engine to a replica count (0–64), or replace its replicas one at a time. */
function EngineActions({
  engine,
  index,
  csrf,
  replicas,
}: {
  engine: EngineStatus;
  index: number;
  csrf: string;
  replicas?: string;
}) {
  return (
    <div class="actions filters engine-actions">
      <form method="post" action="/portal/operator/engines/scale" class="actions filters">
        <input type="hidden" name="_csrf" value={csrf} />
        <input type="hidden" name="model" value={engine.model} />
        <div>
          <label for={`replicas-${index}`}>Replicas of {engine.model}</label>
          <input
            id={`replicas-${index}`}
            name="replicas"
            type="number"
            min={0}
            max={64}
            required
            value={replicas ?? String(engine.desiredReplicas)}
          />
        </div>
        <div>
          <button type="submit" aria-label={`Scale ${engine.model}`}>
            Scale
          </button>
        </div>
      </form>
      <form
        method="post"
        action="/portal/operator/engines/restart"
        data-confirm={`Restart every replica of ${engine.model}, one at a time?`}
      >
        <input type="hidden" name="_csrf" value={csrf} />
        <input type="hidden" name="model" value={engine.model} />
        <button type="submit" class="secondary" aria-label={`Restart ${engine.model}`}>
          Restart
        </button>
      </form>
    </div>
  );
}

/** One engine: its kind, replica counts and host, and a row per replica. */
export function EngineSection({ engine, children }: { engine: EngineStatus; children?: Child }) {
  const ready = engine.replicas.filter((r) => r.state === 'ready').length;
  return (
    <section class="panel">
      <h2 class="first">
        <code>{engine.model}</code>
      </h2>
      <p>
        {engine.kind} engine: {ready} of {engine.desiredReplicas}{' '}
        {engine.desiredReplicas === 1 ? 'replica' : 'replicas'} ready
        {engine.minReplicas !== engine.maxReplicas ? ` (scales ${engine.minReplicas}–${engine.maxReplicas})` : ''}
        {engine.dockerHost ? `, on ${engine.dockerHost}` : ''}.
      </p>
      <div class="table-wrap" tabindex={0} role="region" aria-label={`Replicas of ${engine.model} ${SCROLLS}`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Replica</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                In flight
              </th>
              <th scope="col" class="num">
                Queue
              </th>
              <th scope="col" class="num">
                KV cache
              </th>
              <th scope="col" class="num">
                Prefix hits
              </th>
              <th scope="col">Host</th>
              <th scope="col">GPUs</th>
              <th scope="col" class="num">
                Served
              </th>
              <th scope="col" class="num">
                Restarts
              </th>
            </tr>
          </thead>
          <tbody>
            {engine.replicas.map((replica) => (
              <tr>
                <td class="wrap">
                  <code>{replica.id}</code>
                </td>
                <td class={replica.state === 'ready' ? 'state-active' : 'state-expired'}>{replica.state}</td>
                <td class="num">{replica.inFlight}</td>
                <td class="num">
                  {replica.load ? `${replica.load.waiting} waiting, ${replica.load.running} running` : '—'}
                </td>
                <td class="num">{share(replica.load?.kvCacheUsage)}</td>
                <td class="num">{share(replica.load?.prefixHitRate)}</td>
                <td>{replica.host ?? replica.address}</td>
                <td>{replica.gpus.length ? replica.gpus.join(', ') : '—'}</td>
                <td class="num">{replica.served}</td>
                <td class="num">{replica.restarts}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {engine.replicas.length === 0 && <p class="muted">No replica is running.</p>}
      {children}
    </section>
  );
}

const OPERATOR_PAGES = [
  { id: 'orgs', href: '/portal/operator/orgs', label: 'Organizations' },
  { id: 'models', href: '/portal/operator/models', label: 'Models and prices' },
  { id: 'engines', href: '/portal/operator/engines', label: 'Engines' },
  { id: 'fair-share', href: '/portal/operator/fair-share', label: 'Fair share' },
  { id: 'nodes', href: '/portal/operator/nodes', label: 'Nodes and profiles' },
  { id: 'rate-cards', href: '/portal/operator/rate-cards', label: 'Rate cards' },
  { id: 'rates', href: '/portal/operator/rates', label: 'Conversion rates' },
] as const;

/** The operator pages' own navigation, under the portal's. */
export function OperatorNav({ here }: { here: (typeof OPERATOR_PAGES)[number]['id'] }) {
  return (
    <nav aria-label="Operator" class="subnav">
      {OPERATOR_PAGES.map((item) => (
        <a href={item.href} aria-current={item.id === here ? 'page' : undefined}>
          {item.label}
        </a>
      ))}
    </nav>
  );
}
