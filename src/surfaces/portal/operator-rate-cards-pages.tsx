import type { RateCardRow } from '../../platform/costs/rate-cards.js';
import { formatDecimal, parseDecimal } from '../../platform/costs/decimal.js';
import { Notice, Page, type Viewer } from './layout.js';
import { OperatorNav } from './operator-engines-pages.js';

interface RateCardsView {
  viewer: Viewer;
  cards: RateCardRow[];
  /** Every hardware profile's name, for the filter and the form. */
  profiles: string[];
  /** The profile the list is filtered to, if any. */
  profile?: string;
  notice?: string;
  error?: string;
  form: Record<string, string>;
}

const day = (at: Date | null) =>
  at ? at.toISOString().replace('T00:00:00.000Z', '').replace('.000Z', 'Z').replace('T', ' ') : 'further notice';

/**
 * The rate cards by profile and start, a filter by profile, a form to add one and a delete button
 * on each: as `tollgate rate-cards` has them.
 */
export function OperatorRateCardsPage({ viewer, cards, profiles, profile, notice, error, form }: RateCardsView) {
  return (
    <Page title="Rate cards" user={viewer} current="operator">
      <OperatorNav here="rate-cards" />
      <h1>Rate cards</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <p class="muted">
        What a node-hour and a GPU-hour of a hardware profile cost, in a currency, from a day (UTC midnight) on; cost
        reports price clusters' hours with them. A profile's cards never overlap: a new card without an end ends the
        open card before it, which is how a price changes.
      </p>
      <form method="get" action="/portal/operator/rate-cards" class="actions filters">
        <div>
          <label for="filter-profile">Profile</label>
          <select id="filter-profile" name="profile">
            <option value="">All profiles</option>
            {profiles.map((name) => (
              <option value={name} selected={name === profile}>
                {name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <button type="submit" class="secondary">
            Filter
          </button>
        </div>
      </form>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Rate cards (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Profile</th>
              <th scope="col" class="num">
                Node-hour
              </th>
              <th scope="col" class="num">
                GPU-hour
              </th>
              <th scope="col">From (UTC)</th>
              <th scope="col">To (UTC)</th>
              <th scope="col" class="fold">
                Id
              </th>
              <th scope="col">Delete</th>
            </tr>
          </thead>
          <tbody>
            {cards.map((card) => (
              <tr>
                <td>{card.profile}</td>
                <td class="num">
                  {formatDecimal(parseDecimal(card.nodeHourPrice))} {card.currency}
                </td>
                <td class="num">
                  {formatDecimal(parseDecimal(card.gpuHourPrice))} {card.currency}
                </td>
                <td>{day(card.effectiveFrom)}</td>
                <td>{day(card.effectiveTo)}</td>
                <td class="fold">
                  <code>{card.id}</code>
                </td>
                <td>
                  <form
                    method="post"
                    action="/portal/operator/rate-cards/delete"
                    data-confirm={`Delete the ${card.profile} rate card from ${day(card.effectiveFrom)}? Reports price its hours as if it never existed.`}
                  >
                    <input type="hidden" name="_csrf" value={viewer.csrf} />
                    <input type="hidden" name="id" value={card.id} />
                    <button
                      type="submit"
                      class="secondary"
                      aria-label={`Delete the ${card.profile} rate card from ${day(card.effectiveFrom)}`}
                    >
                      Delete
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {cards.length === 0 && (
        <p class="muted">
          {profile ? `No rate card for ${profile} yet.` : 'No rate card yet: cost reports count hours as unrated.'}
        </p>
      )}
      <h2 id="add-card">Add a rate card</h2>
      {profiles.length === 0 ? (
        <p class="muted">Add a hardware profile first (Nodes and profiles).</p>
      ) : (
        <RateCardForm csrf={viewer.csrf} profiles={profiles} form={form} />
      )}
    </Page>
  );
}

function RateCardForm({ csrf, profiles, form }: { csrf: string; profiles: string[]; form: Record<string, string> }) {
  return (
    <form method="post" action="/portal/operator/rate-cards" class="panel actions filters" aria-labelledby="add-card">
      <input type="hidden" name="_csrf" value={csrf} />
      <div>
        <label for="card-profile">Profile</label>
        <select id="card-profile" name="profile" required>
          {profiles.map((name) => (
            <option value={name} selected={name === form.profile}>
              {name}
            </option>
          ))}
        </select>
      </div>
      <div>
        <label for="card-currency">Currency</label>
        <input
          id="card-currency"
          name="currency"
          type="text"
          required
          maxlength={3}
          value={form.currency ?? ''}
          placeholder="USD"
        />
      </div>
      <div>
        <label for="card-node">Node-hour price</label>
        <input
          id="card-node"
          name="node_hour_price"
          type="text"
          inputmode="decimal"
          required
          value={form.node_hour_price ?? ''}
          placeholder="2.50"
        />
      </div>
      <div>
        <label for="card-gpu">GPU-hour price</label>
        <input
          id="card-gpu"
          name="gpu_hour_price"
          type="text"
          inputmode="decimal"
          required
          value={form.gpu_hour_price ?? ''}
          placeholder="0.40"
        />
      </div>
      <div>
        <label for="card-from">From day (UTC)</label>
        <input id="card-from" name="from" type="date" required value={form.from ?? ''} />
      </div>
      <div>
        <label for="card-to">To day (UTC, optional)</label>
        <input id="card-to" name="to" type="date" value={form.to ?? ''} />
      </div>
      <div>
        <button type="submit">Add rate card</button>
      </div>
    </form>
  );
}
