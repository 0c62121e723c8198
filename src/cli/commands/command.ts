import type { engineView, keyView, ledgerEntryView, modelView, orgView, priceView, projectView, walletView } from '../../admin/views.js';
import type { Args, OptionSpec } from '../args.js';
import type { ApiRequest } from '../client.js';

/**
 * One CLI command: how its flags become one API request, and how the answer
 * reads for a person. `request` runs before anything is sent, so every flag
 * is checked first; `render` is skipped under `--json`.
 *
 * @example
 * const list: Command<List<OrgView>> = {
 *   name: 'orgs list', args: '', summary: 'List organizations.',
 *   request: () => ({ method: 'GET', path: '/orgs' }),
 *   render: (body) => body.data.map((org) => org.id).join('\n'),
 * };
 */
export interface Command<T = unknown> {
  /** The words that select it, e.g. `keys create`. */
  name: string;
  /** The rest of its usage line. */
  args: string;
  summary: string;
  options?: OptionSpec;
  /** How many positional arguments it takes (an id), 0 when absent. */
  positionals?: number;
  request(args: Args): ApiRequest;
  render(body: T): string;
}

// The API's own view types: the CLI reads exactly what the routes write.
export type OrgView = ReturnType<typeof orgView>;
export type ProjectView = ReturnType<typeof projectView>;
export type WalletView = ReturnType<typeof walletView>;
export type LedgerEntryView = ReturnType<typeof ledgerEntryView>;
export type KeyView = ReturnType<typeof keyView>;
export type ModelView = ReturnType<typeof modelView>;
export type PriceView = ReturnType<typeof priceView>;
export type EngineView = ReturnType<typeof engineView>;
export interface List<T> {
  object: 'list';
  data: T[];
}

export const STRING = { type: 'string' } as const;
export const BOOLEAN = { type: 'boolean' } as const;
