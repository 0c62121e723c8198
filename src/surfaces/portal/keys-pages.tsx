import { type KeyRow, keyStatus } from '../../gateway/keys/service.js';
import { KEY_EXPIRIES } from '../../gateway/keys/bounds.js';
import type { Band } from '../../gateway/flow/bands.js';
import { BandField, KeySettingsFields } from './keys-fields.js';
import { Notice, Page, type Viewer, When } from './layout.js';

const EXPIRY_LABELS: Record<(typeof KEY_EXPIRIES)[number], string> = {
  never: 'Never',
  '7d': '7 days',
  '30d': '30 days',
  '90d': '90 days',
  '1y': '1 year',
};
const limit = (value: number | null) => (value === null ? 'unlimited' : value.toLocaleString('en-US'));

export function KeysPage({
  viewer,
  keys,
  lastUsed,
  allowance,
  error,
  notice,
}: {
  viewer: Viewer;
  keys: KeyRow[];
  lastUsed: Map<string, Date>;
  /** The viewer's own keys count against TOLLGATE_KEYS_PER_ACCOUNT. */
  allowance: { userId: string; perAccount: number };
  error?: string;
  notice?: string;
}) {
  const now = new Date();
  const live = keys.filter((key) => key.userId === allowance.userId && keyStatus(key, now) === 'active').length;
  return (
    <Page title="API keys" user={viewer} current="keys">
      <h1>API keys</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <div class="table-wrap" tabindex={0} role="region" aria-label="API keys (scrolls sideways on a narrow screen)">
        <table>
          <caption class="muted">
            Keys of your organization you may manage. Your own live keys: {live} of {allowance.perAccount}.
          </caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" class="fold">
                Key
              </th>
              <th scope="col">State</th>
              <th scope="col">Actions</th>
              <th scope="col" class="fold">
                Created
              </th>
              <th scope="col" class="fold">
                Expires
              </th>
              <th scope="col">Last used</th>
              <th scope="col">Limits</th>
              <th scope="col">Options</th>
            </tr>
          </thead>
          <tbody>
            {keys.map((key) => {
              const state = keyStatus(key, now);
              return (
                <tr>
                  <td class="name">{key.name}</td>
                  <td class="fold">
                    <code>{key.secretHint}</code>
                  </td>
                  <td class={`state-${state}`}>{state}</td>
                  <td>
                    {state === 'active' ? (
                      <span class="actions">
                        <a href={`/portal/keys/${key.id}/edit`} aria-label={`Edit ${key.name}`}>
                          Edit
                        </a>
                        <a href={`/portal/keys/${key.id}/delete`} aria-label={`Delete ${key.name}`}>
                          Delete
                        </a>
                      </span>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td class="when fold">
                    <When at={key.createdAt} />
                  </td>
                  <td class="when fold">
                    <When at={key.expiresAt} />
                  </td>
                  <td class="when">
                    <When at={lastUsed.get(key.id) ?? null} />
                  </td>
                  <td class="wrap">
                    {limit(key.requestsPerMinute)} a minute, {limit(key.maxConcurrency)} at once; tokens:{' '}
                    {limit(key.tokensPerMinute)} a minute, {limit(key.monthlyTokens)} a month
                  </td>
                  <td class="wrap">
                    {[
                      key.storeRequestData ? 'stores data' : null,
                      key.responseCache ? 'cache on' : null,
                      key.band === 'default' ? null : `${key.band} band`,
                    ]
                      .filter(Boolean)
                      .join(', ') || '—'}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <h2 id="create">Create a key</h2>
      <div class="panel">
        {live >= allowance.perAccount ? (
          <p>You have {allowance.perAccount} live keys, the most one account may hold. Delete one to create another.</p>
        ) : (
          <form method="post" action="/portal/keys">
            <input type="hidden" name="_csrf" value={viewer.csrf} />
            <label for="name">Name</label>
            <input id="name" name="name" type="text" required maxlength={200} />
            <label for="expiry">Expires</label>
            <select id="expiry" name="expiry">
              {KEY_EXPIRIES.map((expiry) => (
                <option value={expiry}>{EXPIRY_LABELS[expiry]}</option>
              ))}
            </select>
            <KeySettingsFields />
            <button type="submit">Create key</button>
          </form>
        )}
      </div>
    </Page>
  );
}

export function KeyCreatedPage({ viewer, apiKey: key, secret }: { viewer: Viewer; apiKey: KeyRow; secret: string }) {
  return (
    <Page title="Key created" user={viewer} current="keys">
      <h1>Key “{key.name}” created</h1>
      <div class="panel">
        <Notice kind="ok">
          Copy the key now: it will not be shown again. Only its first and last characters are kept.
        </Notice>
        <div class="secret">
          <code id="secret">{secret}</code>
          <button type="button" class="secondary" data-copy="#secret" hidden>
            Copy
          </button>
        </div>
        <p>
          <a href="/portal/keys">Back to the keys</a>
        </p>
      </div>
    </Page>
  );
}

export function KeyEditPage({
  viewer,
  apiKey: key,
  bands,
  error,
}: {
  viewer: Viewer;
  apiKey: KeyRow;
  /** The bands the viewer may choose for this key; null when the viewer does not set bands. */
  bands: readonly Band[] | null;
  error?: string;
}) {
  return (
    <Page title={`Edit ${key.name}`} user={viewer} current="keys">
      <h1>Edit “{key.name}”</h1>
      {error && <Notice kind="error">{error}</Notice>}
      <form method="post" action={`/portal/keys/${key.id}`} class="panel">
        <input type="hidden" name="_csrf" value={viewer.csrf} />
        <KeySettingsFields row={key} />
        <BandField band={key.band} bands={bands} />
        <div class="actions">
          <button type="submit">Save</button>
          <a href="/portal/keys">Cancel</a>
        </div>
      </form>
      <p>
        <a href={`/portal/budgets/key/${key.id}`}>Budget and spend</a>
      </p>
    </Page>
  );
}

export function KeyDeletePage({ viewer, apiKey: key }: { viewer: Viewer; apiKey: KeyRow }) {
  return (
    <Page title={`Delete ${key.name}`} user={viewer} current="keys">
      <h1>Delete “{key.name}”?</h1>
      <div class="panel">
        <p>
          Requests with <code>{key.secretHint}</code> are refused from the moment you delete it. This cannot be undone.
        </p>
        <form
          method="post"
          action={`/portal/keys/${key.id}/delete`}
          class="actions"
          data-confirm={`Delete the key “${key.name}”?`}
        >
          <input type="hidden" name="_csrf" value={viewer.csrf} />
          <button type="submit" class="danger">
            Delete key
          </button>
          <a href="/portal/keys">Cancel</a>
        </form>
      </div>
    </Page>
  );
}
