import { KEY_LIMIT_MAX } from '../../../gateway/keys/bounds.js';
import type { Args } from '../args.js';
import { UsageError } from '../errors.js';
import { segment } from '../client.js';
import { date, fields, limit, table } from '../output.js';
import { BOOLEAN, type Command, type KeyView, type List, STRING } from './command.js';

// `keys create|list|show|update|revoke`. Limits are checked here with the
// API's bounds (gateway/keys/bounds.ts); "unlimited" clears a token limit (null in the API).
//
// @example
// tollgate keys create --org org_123 --name ci --user usr_456 --expiry 30d --rpm 120 --tpm
// unlimited

const limitOptions = { name: STRING, rpm: STRING, concurrency: STRING, tpm: STRING, 'monthly-tokens': STRING };

function limits(a: Args) {
  return {
    requests_per_minute: a.int('rpm', 1, KEY_LIMIT_MAX.requests_per_minute),
    max_concurrency: a.int('concurrency', 1, KEY_LIMIT_MAX.max_concurrency),
    tokens_per_minute: a.limit('tpm', KEY_LIMIT_MAX.tokens_per_minute),
    monthly_tokens: a.limit('monthly-tokens', KEY_LIMIT_MAX.monthly_tokens),
  };
}

const describe = (k: KeyView) =>
  fields([
    ['id', k.id],
    ['name', k.name],
    ['org', k.org_id],
    ['user', k.user_id],
    ['project', k.project_id],
    ['hint', k.hint],
    ['status', k.status],
    ['created', date(k.created_at)],
    ['expires', date(k.expires_at, 'never')],
    ['revoked', date(k.revoked_at)],
    ['requests/min', k.requests_per_minute],
    ['concurrency', k.max_concurrency],
    ['tokens/min', limit(k.tokens_per_minute)],
    ['monthly tokens', limit(k.monthly_tokens)],
    ['store request data', k.store_request_data],
    ['response cache', k.response_cache],
  ]);

const create: Command<KeyView & { secret: string }> = {
  name: 'keys create',
  args: '--org ID --name N [--user ID] [--expiry never|7d|30d|90d|1y] [--project ID] [--rpm N] [--concurrency N] [--tpm N|unlimited] [--monthly-tokens N|unlimited] [--store-request-data] [--response-cache]',
  summary: "Issue an API key acting as a user (default: the organization's first owner); its secret is printed once.",
  options: {
    ...limitOptions,
    org: STRING,
    user: STRING,
    expiry: STRING,
    project: STRING,
    'store-request-data': BOOLEAN,
    'response-cache': BOOLEAN,
  },
  request: (a) => ({
    method: 'POST',
    path: `/orgs/${segment(a.id('org', 'org'))}/keys`,
    body: {
      name: a.required('name'),
      expiry: a.optional('expiry'),
      project_id: a.optional('project'),
      user_id: a.optional('user'),
      ...limits(a),
      store_request_data: a.flag('store-request-data'),
      response_cache: a.flag('response-cache'),
    },
  }),
  render: (k) =>
    `${describe(k)}\n\nsecret: ${k.secret}\n\nThis secret is shown once: store it now. Tollgate keeps only its hash and cannot show it again.`,
};

const list: Command<List<KeyView>> = {
  name: 'keys list',
  args: '--org ID',
  summary: "List an organization's keys.",
  options: { org: STRING },
  request: (a) => ({ method: 'GET', path: `/orgs/${segment(a.id('org', 'org'))}/keys` }),
  render: ({ data }) =>
    table([
      ['ID', 'NAME', 'HINT', 'STATUS', 'EXPIRES', 'RPM', 'TPM'],
      ...data.map((k) => [
        k.id,
        k.name,
        k.hint,
        k.status,
        date(k.expires_at, 'never'),
        String(k.requests_per_minute),
        limit(k.tokens_per_minute),
      ]),
    ]),
};

const show: Command<KeyView> = {
  name: 'keys show',
  args: 'ID',
  summary: 'Show one key.',
  positionals: 1,
  request: (a) => ({ method: 'GET', path: `/keys/${segment(a.id('key ID'))}` }),
  render: describe,
};

const update: Command<KeyView> = {
  name: 'keys update',
  args: 'ID [--name N] [--rpm N] [--concurrency N] [--tpm N|unlimited] [--monthly-tokens N|unlimited] [--store-request-data true|false] [--response-cache true|false]',
  summary: "Change a key's name, limits or toggles; takes effect on the next request.",
  options: { ...limitOptions, 'store-request-data': STRING, 'response-cache': STRING },
  positionals: 1,
  request: (a) => {
    const path = `/keys/${segment(a.id('key ID'))}`;
    const body = {
      name: a.optional('name'),
      ...limits(a),
      store_request_data: a.bool('store-request-data'),
      response_cache: a.bool('response-cache'),
    };
    if (Object.values(body).every((value) => value === undefined))
      throw new UsageError('nothing to change: pass at least one of the flags below');
    return { method: 'PATCH', path, body };
  },
  render: describe,
};

const revoke: Command<KeyView> = {
  name: 'keys revoke',
  args: 'ID',
  summary: 'Revoke a key at once.',
  positionals: 1,
  request: (a) => ({ method: 'POST', path: `/keys/${segment(a.id('key ID'))}/revoke` }),
  render: (k) => `Revoked key ${k.id} "${k.name}" (${k.hint}).`,
};

export const keyCommands = [create, list, show, update, revoke];
