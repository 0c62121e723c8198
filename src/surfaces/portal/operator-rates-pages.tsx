import type { ConversionRateRow } from '../../platform/costs/conversion-rates.js';
import { formatDecimal, parseDecimal } from '../../platform/costs/decimal.js';
import { Notice, Page, type Viewer } from './layout.js';
import { OperatorNav } from './operator-engines-pages.js';

/** The conversion rates, newest day first per pair, a form to set one, and a remove button on each. */
export function OperatorRatesPage({
  viewer,
  rates,
  notice,
  error,
  form,
}: {
  viewer: Viewer;
  rates: ConversionRateRow[];
  notice?: string;
  error?: string;
  form: Record<string, string>;
}) {
  return (
    <Page title="Conversion rates" user={viewer} current="operator">
      <OperatorNav here="rates" />
      <h1>Conversion rates</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <p class="muted">
        A cost report converts a rate card's currency (base) into an organization's billing currency (quote) with the
        newest rate of the pair on or before each day. One unit of base is worth <em>rate</em> units of quote, exactly
        as written (no rounding until the report's totals).
      </p>
      <div
        class="table-wrap"
        tabindex={0}
        role="region"
        aria-label="Conversion rates (scrolls sideways on a narrow screen)"
      >
        <table>
          <thead>
            <tr>
              <th scope="col">Pair</th>
              <th scope="col">From (UTC)</th>
              <th scope="col" class="num">
                Rate
              </th>
              <th scope="col">Remove</th>
            </tr>
          </thead>
          <tbody>
            {rates.map((rate) => (
              <tr>
                <td>
                  {rate.base} → {rate.quote}
                </td>
                <td>{rate.effectiveOn}</td>
                <td class="num">{formatDecimal(parseDecimal(rate.rate))}</td>
                <td>
                  <form
                    method="post"
                    action="/portal/operator/rates/remove"
                    data-confirm={`Remove the ${rate.base} → ${rate.quote} rate of ${rate.effectiveOn}?`}
                  >
                    <input type="hidden" name="_csrf" value={viewer.csrf} />
                    <input type="hidden" name="base" value={rate.base} />
                    <input type="hidden" name="quote" value={rate.quote} />
                    <input type="hidden" name="date" value={rate.effectiveOn} />
                    <button
                      type="submit"
                      class="secondary"
                      aria-label={`Remove ${rate.base} to ${rate.quote} of ${rate.effectiveOn}`}
                    >
                      Remove
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {rates.length === 0 && (
        <p class="muted">No conversion rate yet: reports keep each line in its rate card's currency.</p>
      )}
      <h2>Set a rate</h2>
      <form method="post" action="/portal/operator/rates" class="panel actions filters">
        <input type="hidden" name="_csrf" value={viewer.csrf} />
        <div>
          <label for="base">Base (rate card)</label>
          <input id="base" name="base" type="text" required maxlength={3} value={form.base ?? ''} placeholder="EUR" />
        </div>
        <div>
          <label for="quote">Quote (billing)</label>
          <input
            id="quote"
            name="quote"
            type="text"
            required
            maxlength={3}
            value={form.quote ?? ''}
            placeholder="USD"
          />
        </div>
        <div>
          <label for="date">From day (UTC)</label>
          <input id="date" name="date" type="date" required value={form.date ?? ''} />
        </div>
        <div>
          <label for="rate">Rate</label>
          <input
            id="rate"
            name="rate"
            type="text"
            inputmode="decimal"
            required
            value={form.rate ?? ''}
            placeholder="1.0825"
          />
        </div>
        <div>
          <button type="submit">Save rate</button>
        </div>
      </form>
    </Page>
  );
}
