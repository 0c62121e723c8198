import { pricePerMillion } from '../../gateway/billing/money.js';
import type { ModelRow, PriceRow } from '../../gateway/catalog/service.js';
import type { EngineStatus } from '../../gateway/engines/types.js';
import { Notice, Page } from './layout.js';
import { EngineSection, OperatorNav } from './operator-engines-pages.js';
import type { Viewer } from './layout.js';

export interface OperatorModelsView {
  viewer: Viewer;
  models: ModelRow[];
  prices: Map<string, PriceRow>;
  engines: Map<string, EngineStatus>;
  chosen: ModelRow | null;
  currency: string;
  notice?: string;
  error?: string;
}

/** The whole catalog with prices and engines; the chosen model's switch, prices and replicas below. */
export function OperatorModelsPage(view: OperatorModelsView) {
  const { currency, chosen } = view;
  return (
    <Page title="Models and prices" user={view.viewer} current="operator">
      <OperatorNav here="models" />
      <h1>Models and prices</h1>
      {view.error && <Notice kind="error">{view.error}</Notice>}
      {view.notice && <Notice kind="ok">{view.notice}</Notice>}
      <p class="muted">
        Every model of the catalog, disabled ones too. Prices are per million tokens, in {currency}, the currency
        wallets are charged in.
      </p>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Models (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                In / 1M
              </th>
              <th scope="col" class="num">
                Out / 1M
              </th>
              <th scope="col" class="fold">
                Engine
              </th>
              <th scope="col" class="fold">
                Task
              </th>
            </tr>
          </thead>
          <tbody>
            {view.models.map((model) => {
              const price = view.prices.get(model.id);
              const engine = view.engines.get(model.id);
              return (
                <tr>
                  <td>
                    <a href={`/portal/operator/models?model=${encodeURIComponent(model.id)}#chosen`}>{model.id}</a>
                  </td>
                  <td class={model.enabled ? 'state-active' : 'state-expired'}>
                    {model.enabled ? 'enabled' : 'disabled'}
                  </td>
                  <td class="num">{price ? pricePerMillion(price.inputPerToken) : '—'}</td>
                  <td class="num">{price ? pricePerMillion(price.outputPerToken) : '—'}</td>
                  <td class="fold">
                    {engine
                      ? `${engine.kind}, ${engine.replicas.filter((r) => r.state === 'ready').length}/${engine.desiredReplicas} ready`
                      : 'none'}
                  </td>
                  <td class="fold">{model.taskType}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {chosen && <ChosenModel view={view} model={chosen} />}
    </Page>
  );
}

function ChosenModel({ view, model }: { view: OperatorModelsView; model: ModelRow }) {
  const price = view.prices.get(model.id);
  const engine = view.engines.get(model.id);
  return (
    <section id="chosen">
      <h2>
        <code>{model.id}</code>
      </h2>
      <p>
        {model.displayName} · {model.taskType} · context {model.contextLength.toLocaleString('en-US')} tokens ·{' '}
        <code>{model.hfRepoId}</code>
      </p>
      <form method="post" action="/portal/operator/models/enabled" class="panel actions">
        <input type="hidden" name="_csrf" value={view.viewer.csrf} />
        <input type="hidden" name="model" value={model.id} />
        <input type="hidden" name="enabled" value={model.enabled ? 'false' : 'true'} />
        <span>{model.enabled ? 'Enabled: clients can call it.' : 'Disabled: requests naming it are refused.'}</span>
        <button type="submit" class={model.enabled ? 'danger' : ''}>
          {model.enabled ? 'Disable' : 'Enable'}
        </button>
      </form>
      <form method="post" action="/portal/operator/models/price" class="panel actions filters">
        <input type="hidden" name="_csrf" value={view.viewer.csrf} />
        <input type="hidden" name="model" value={model.id} />
        <PriceField name="input_per_million" label="Input" currency={view.currency} value={price?.inputPerToken} />
        <PriceField
          name="cached_input_per_million"
          label="Cached input (from the prefix cache)"
          currency={view.currency}
          value={price?.cachedInputPerToken}
          unset="the input price"
        />
        <PriceField name="output_per_million" label="Output" currency={view.currency} value={price?.outputPerToken} />
        <PriceField
          name="batch_input_per_million"
          label="Batch input"
          currency={view.currency}
          value={price?.batchInputPerToken}
          unset="the input price"
        />
        <PriceField
          name="batch_output_per_million"
          label="Batch output"
          currency={view.currency}
          value={price?.batchOutputPerToken}
          unset="the output price"
        />
        <div>
          <button type="submit">Save prices</button>
        </div>
      </form>
      <p class="muted hint">
        Prices are exact to 0.001 per million tokens; a request is charged at the price of the moment it ends. Cached
        input is the prompt tokens the engine read from its prefix cache (empty: the input price); batch prices are a
        batch line's (empty: the input and output prices).
      </p>
      {engine ? (
        <EngineSection engine={engine} />
      ) : (
        <p class="muted">No engine serves this model: requests for it fail until one is configured.</p>
      )}
    </section>
  );
}

/**
 * One price of the price form, per million tokens. `unset`: what an empty field means (the field is
 * optional); without it the field is required.
 */
function PriceField(props: {
  name: string;
  label: string;
  currency: string;
  value: bigint | null | undefined;
  unset?: string;
}) {
  return (
    <div>
      <label for={props.name}>
        {props.label}, {props.currency} per 1M tokens
      </label>
      <input
        id={props.name}
        name={props.name}
        type="text"
        inputmode="decimal"
        required={props.unset === undefined}
        placeholder={props.unset}
        value={props.value != null ? pricePerMillion(props.value) : ''}
      />
    </div>
  );
}
