import type { engineView, keyView, operatorModelView, orgView, priceView, walletView } from '../../admin/views.js';
import type { projectView } from '../../api/projects.js';
import type { userView } from '../../api/users.js';
import type { modelView as publicModelView } from '../../v1/models.js';
import type { Args, OptionSpec } from '../args.js';
import type { ApiRequest } from '../client.js';
import type { Input } from '../terminal.js';

/**
 * One CLI command: how its flags become an API request, and how the answer
 * reads for a person. `request` runs before anything is sent, so every flag
 * is checked first; it may be async to read standard input (a password),
 * which it does only after the flags are checked. `render` is skipped under
 * `--json`.
 *
 * A command may send several requests at once (`request` answers a list);
 * `combine` then makes their answers one body, the one `--json` prints.
 * `receive`, when there, acts on the answer first (a download's file).
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
  /**
   * 'public': the gateway's `/v1` API with an API key (`--api-key`, TOLLGATE_API_KEY), not the
   * operator token. 'key-or-operator': `/v1` when a key is given (`--api-key`, else
   * TOLLGATE_API_KEY unless `--token` is), else `/admin/v1`; the path is the same under both.
   */
  api?: 'admin' | 'public' | 'key-or-operator';
  request(args: Args, input: Input): ApiRequest | ApiRequest[] | Promise<ApiRequest | ApiRequest[]>;
  combine?(bodies: unknown[]): T;
  /**
   * Does what the answer is for before it is shown (a download writes its file) and answers what
   * `render` and `--json` show; `api` sends the requests that follow from it (a batch made from
   * the file just uploaded) and shows `progress` lines while it waits.
   */
  receive?(body: unknown, args: Args, api: FollowUp): Promise<T>;
  /**
   * Why an answer is a failure (exit 1) though the request succeeded (books that differ), or null.
   * With `--json` the body is printed and the reason goes to stderr; without, only the reason: the
   * exit code is the same.
   */
  failure?(body: T): string | null;
  /**
   * A line of how far it has got, for each progress line of a streamed answer (NDJSON: the
   * command's requests are sent asking for it). Shown on stderr when it is a terminal, one line
   * rewritten in place; `room` is how many characters fit on it (the terminal's width less one).
   */
  progress?(event: unknown, room: number): string;
  /** The last progress line stays on the terminal at the end (a watch's final state), not erased. */
  progressStays?: boolean;
  /** The body (null for 204 No Content) as text; `args` for what the body does not say. */
  render(body: T, args: Args): string;
}

/** What `receive` may do after the first answer: ask again, and say how far it has got. */
export interface FollowUp {
  send(request: ApiRequest): Promise<unknown>;
  /** Shown with the command's `progress` on stderr when it is a terminal. */
  progress(event: unknown): void;
}

// The API's own view types: the CLI reads exactly what the routes write.
export type OrgView = ReturnType<typeof orgView>;
export type ProjectView = ReturnType<typeof projectView>;
export type WalletView = ReturnType<typeof walletView>;
export type KeyView = ReturnType<typeof keyView>;
export type ModelView = ReturnType<typeof operatorModelView>;
export type PriceView = ReturnType<typeof priceView>;
export type EngineView = ReturnType<typeof engineView>;
export type UserView = ReturnType<typeof userView>;
/** GET /v1/models: a model an API key can call. */
export type PublicModelView = ReturnType<typeof publicModelView>;
/** GET /v1/pricing (its handler writes a Response, so the shape is spelled out here). */
export interface PricingList {
  object: 'list';
  currency: string;
  data: {
    model: string;
    task_type: string;
    input_per_million_tokens: string;
    cached_input_per_million_tokens: string;
    output_per_million_tokens: string;
  }[];
}
export interface List<T> {
  object: 'list';
  data: T[];
}

export const STRING = { type: 'string' } as const;
export const BOOLEAN = { type: 'boolean' } as const;
