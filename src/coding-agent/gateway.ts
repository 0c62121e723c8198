import { createClient } from '../surfaces/cli/client.js';
import type { CliSettings } from '../surfaces/cli/settings.js';

export interface ModelInfo {
  id: string;
  /** The model's context length from `/v1/models`, when the catalog has one. */
  contextLength: number | null;
}

export interface Price {
  inputNanosPerToken: bigint;
  /**
   * A prompt token the engine read from its prefix cache (the input price where the operator set
   * none).
   */
  cachedInputNanosPerToken: bigint;
  outputNanosPerToken: bigint;
}

/**
 * What the agent asks of the gateway besides chat: the key's models, the
 * prices (`/v1/pricing`, per token in nano-units: a turn's cost is exact
 * integer arithmetic, the same the gateway charges with) and the wallet.
 *
 * @example
 * const gateway = gatewayOf(settings);
 * const models = await gateway.models();
 */
export function gatewayOf(settings: CliSettings) {
  const api = createClient({ ...settings, base: '/v1' });
  return {
    async models(): Promise<ModelInfo[]> {
      const body = (await api.send({ method: 'GET', path: '/models?task_type=chat' })) as {
        data: { id: string; context_length?: number | null }[];
      };
      return body.data.map((model) => ({ id: model.id, contextLength: model.context_length ?? null }));
    },
    async prices(): Promise<{ currency: string; byModel: Map<string, Price> }> {
      const body = (await api.send({ method: 'GET', path: '/pricing' })) as {
        currency: string;
        data: {
          model: string;
          input_nanos_per_token: string;
          cached_input_nanos_per_token?: string;
          output_nanos_per_token: string;
        }[];
      };
      const byModel = new Map(
        body.data.map((row) => [
          row.model,
          {
            inputNanosPerToken: BigInt(row.input_nanos_per_token),
            // An older gateway lists no cached price: it bills every prompt token at the input
            // price.
            cachedInputNanosPerToken: BigInt(row.cached_input_nanos_per_token ?? row.input_nanos_per_token),
            outputNanosPerToken: BigInt(row.output_nanos_per_token),
          },
        ]),
      );
      return { currency: body.currency, byModel };
    },
    /**
     * The key's usage records of the given request ids (`/v1/usage/requests`
     * since `from`, newest first, at most `USAGE_PAGES` pages): what the
     * gateway billed for them, cancelled calls included.
     */
    async usageOf(ids: string[], from: string): Promise<{ records: UsageRow[]; missing: number }> {
      const wanted = new Set(ids);
      const records: UsageRow[] = [];
      let after: string | null = null;
      for (let page = 0; page < USAGE_PAGES && records.length < wanted.size; page++) {
        const query = new URLSearchParams({ from, limit: '500', ...(after ? { after } : {}) });
        const body = (await api.send({ method: 'GET', path: `/usage/requests?${query.toString()}` })) as {
          data: UsageRow[];
          next_cursor: string | null;
        };
        records.push(...body.data.filter((row) => wanted.has(row.id)));
        after = body.next_cursor;
        if (!after) break;
      }
      return { records, missing: wanted.size - records.length };
    },
    /** The balance in nanos, or null when the gateway does not say (an older gateway). */
    async balance(): Promise<bigint | null> {
      try {
        const body = (await api.send({ method: 'GET', path: '/wallet' })) as { balance_nanos: string };
        return BigInt(body.balance_nanos);
      } catch {
        return null;
      }
    },
  };
}

export type Gateway = ReturnType<typeof gatewayOf>;

/** A usage record as `/v1/usage/requests` lists it (the fields the agent reads). */
export interface UsageRow {
  id: string;
  prompt_tokens: number;
  /** Of `prompt_tokens`, those read from the engine's prefix cache (absent from an older gateway). */
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens: number;
  cost_nanos: string;
  status: number;
}

/** Pages of usage records read for `/cost` (500 records a page). */
const USAGE_PAGES = 20;
