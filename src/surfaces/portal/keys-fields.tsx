import type { Band } from '../../gateway/flow/bands.js';
import type { KeyRow } from '../../gateway/keys/service.js';

// The fields of the key forms (`keys-pages.tsx`): its limits and toggles, and its priority band.

/**
 * The limit and toggle inputs of the create and edit forms, filled with `key`'s values when
 * editing.
 */
export function KeySettingsFields({ row }: { row?: KeyRow }) {
  return (
    <>
      <div class="grid">
        <div>
          <label for="requests_per_minute">Requests per minute</label>
          <input
            id="requests_per_minute"
            name="requests_per_minute"
            type="number"
            min="1"
            required
            value={String(row?.requestsPerMinute ?? 60)}
          />
        </div>
        <div>
          <label for="max_concurrency">Requests at once</label>
          <input
            id="max_concurrency"
            name="max_concurrency"
            type="number"
            min="1"
            required
            value={String(row?.maxConcurrency ?? 10)}
          />
        </div>
        <div>
          <label for="tokens_per_minute">Tokens per minute (empty: unlimited)</label>
          <input
            id="tokens_per_minute"
            name="tokens_per_minute"
            type="number"
            min="1"
            value={row?.tokensPerMinute === null || row === undefined ? '' : String(row.tokensPerMinute)}
          />
        </div>
        <div>
          <label for="monthly_tokens">Tokens per month (empty: unlimited)</label>
          <input
            id="monthly_tokens"
            name="monthly_tokens"
            type="number"
            min="1"
            value={row?.monthlyTokens === null || row === undefined ? '' : String(row.monthlyTokens)}
          />
        </div>
      </div>
      <p class="check">
        <input
          id="store_request_data"
          name="store_request_data"
          type="checkbox"
          value="on"
          checked={row?.storeRequestData ?? false}
        />{' '}
        <label for="store_request_data">Store request and response data</label>
      </p>
      <p class="check">
        <input
          id="response_cache"
          name="response_cache"
          type="checkbox"
          value="on"
          checked={row?.responseCache ?? false}
        />{' '}
        <label for="response_cache">Cache responses</label>
      </p>
    </>
  );
}

/**
 * The key's priority band (docs/fair-sharing.md): a choice among `bands` for those who may set it,
 * else its name. `interactive` is among them only where the viewer may keep or give it.
 */
export function BandField({ band, bands }: { band: Band; bands: readonly Band[] | null }) {
  if (bands === null)
    return (
      <p>
        Priority band: <strong>{band}</strong> (set by the organization's owners and admins)
      </p>
    );
  return (
    <>
      <label for="band">Priority band</label>
      <select id="band" name="band" aria-describedby="band-help">
        {bands.map((choice) => (
          <option value={choice} selected={choice === band}>
            {choice}
          </option>
        ))}
      </select>
      <p id="band-help" class="muted">
        When the fleet is full, higher bands go first: default, then background, then batch. Only the operator gives
        interactive.
      </p>
    </>
  );
}
