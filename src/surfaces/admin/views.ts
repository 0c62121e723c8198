/*
 * Rows to the JSON the management API answers with: snake_case fields, dates
 * in ISO 8601, money as a decimal string plus the exact `_nanos` integer as a
 * string (JSON numbers cannot hold every bigint). The key hash never leaves.
 *
 * @example
 * return c.json(orgView(org, 0n, 'USD'), 201);
 */
import type { NodeRow, ProfileRow } from '../../platform/clusters/service.js';
import type { EngineStatus } from '../../gateway/engines/types.js';
import { formatAmount, shownPrice } from '../../gateway/billing/money.js';
import type { LedgerEntry } from '../../gateway/billing/ledger-entries.js';
import type { ModelRow, PriceRow } from '../../gateway/catalog/service.js';
import { keyStatus, type KeyRow } from '../../gateway/keys/service.js';
import type { Organization } from '../../platform/orgs/service.js';
import type { ConversionRateRow } from '../../platform/costs/conversion-rates.js';
import { formatDecimal, parseDecimal } from '../../platform/costs/decimal.js';
import type { RateCardRow } from '../../platform/costs/rate-cards.js';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function listOf<T>(data: T[]) {
  return { object: 'list' as const, data };
}

export function orgView(org: Organization, balance: bigint, currency: string) {
  return {
    id: org.id,
    object: 'organization' as const,
    name: org.name,
    share_weight: org.shareWeight,
    created_at: iso(org.createdAt),
    currency,
    balance: formatAmount(balance),
    balance_nanos: balance.toString(),
  };
}

function ledgerEntryView(entry: LedgerEntry) {
  return {
    id: entry.id,
    kind: entry.kind,
    amount: formatAmount(entry.amount),
    amount_nanos: entry.amount.toString(),
    balance_after: formatAmount(entry.balanceAfter),
    balance_after_nanos: entry.balanceAfter.toString(),
    request_id: entry.requestId,
    note: entry.note,
    created_at: iso(entry.createdAt),
  };
}

export function walletView(orgId: string, currency: string, balance: bigint, ledger: LedgerEntry[]) {
  return {
    object: 'wallet' as const,
    org_id: orgId,
    currency,
    balance: formatAmount(balance),
    balance_nanos: balance.toString(),
    ledger: ledger.map(ledgerEntryView),
  };
}

export function keyView(key: KeyRow, now = new Date()) {
  return {
    id: key.id,
    object: 'api_key' as const,
    org_id: key.orgId,
    user_id: key.userId,
    project_id: key.projectId,
    name: key.name,
    hint: key.secretHint,
    status: keyStatus(key, now),
    created_at: iso(key.createdAt),
    expires_at: iso(key.expiresAt),
    revoked_at: iso(key.revokedAt),
    requests_per_minute: key.requestsPerMinute,
    max_concurrency: key.maxConcurrency,
    tokens_per_minute: key.tokensPerMinute,
    monthly_tokens: key.monthlyTokens,
    store_request_data: key.storeRequestData,
    response_cache: key.responseCache,
    band: key.band,
  };
}

/** A price's per-million fields as the operator API names them. */
const perMillion = (shown: ReturnType<typeof shownPrice>) => ({
  input_per_million: shown.inputPerMillion,
  cached_input_per_million: shown.cachedInputPerMillion,
  output_per_million: shown.outputPerMillion,
  batch_input_per_million: shown.batchInputPerMillion,
  batch_output_per_million: shown.batchOutputPerMillion,
});

export function operatorModelView(model: ModelRow, price: PriceRow | null) {
  return {
    id: model.id,
    object: 'model' as const,
    display_name: model.displayName,
    hf_repo_id: model.hfRepoId,
    task_type: model.taskType,
    context_length: model.contextLength,
    enabled: model.enabled,
    created_at: iso(model.createdAt),
    price: price ? perMillion(shownPrice(price)) : null,
  };
}

export function priceView(price: PriceRow, currency: string) {
  const shown = shownPrice(price);
  return {
    object: 'price' as const,
    model_id: price.modelId,
    currency,
    ...perMillion(shown),
    input_nanos_per_token: shown.inputNanosPerToken,
    cached_input_nanos_per_token: shown.cachedInputNanosPerToken,
    output_nanos_per_token: shown.outputNanosPerToken,
    batch_input_nanos_per_token: shown.batchInputNanosPerToken,
    batch_output_nanos_per_token: shown.batchOutputNanosPerToken,
    updated_at: iso(price.updatedAt),
  };
}

/** An engine and its replicas, for operators: states, containers, addresses, load. */
export function engineView(engine: EngineStatus) {
  return {
    object: 'engine' as const,
    model: engine.model,
    kind: engine.kind,
    desired_replicas: engine.desiredReplicas,
    min_replicas: engine.minReplicas,
    max_replicas: engine.maxReplicas,
    docker_host: engine.dockerHost,
    ready_replicas: engine.replicas.filter((r) => r.state === 'ready').length,
    replicas: engine.replicas.map((r) => ({
      id: r.id,
      state: r.state,
      container: r.container,
      address: r.address,
      started_at: r.startedAt,
      uptime_seconds: r.uptimeSeconds,
      in_flight: r.inFlight,
      served: r.served,
      restarts: r.restarts,
      host: r.host,
      gpus: r.gpus,
      // The replica's own report at the last /metrics scrape (Docker engines): its queue, batch, KV
      // cache and prefix-cache hit rate.
      load: r.load
        ? {
            waiting: r.load.waiting,
            running: r.load.running,
            kv_cache_usage: r.load.kvCacheUsage,
            prefix_hit_rate: r.load.prefixHitRate,
          }
        : null,
    })),
  };
}

export function profileView(profile: ProfileRow) {
  return {
    name: profile.name,
    gpus_per_node: profile.gpusPerNode,
    gpu_model: profile.gpuModel,
    cpu_cores: profile.cpuCores,
    memory_gib: profile.memoryGib,
    created_at: iso(profile.createdAt),
  };
}

/**
 * A node as operators see it: never its credential. `state` is `releasing` while a deleted
 * cluster's key is still on it.
 */
export function nodeView(node: NodeRow) {
  return {
    id: node.id,
    profile: node.profile,
    address: node.address,
    access: node.access,
    ssh: node.sshUser
      ? {
          user: node.sshUser,
          port: node.sshPort,
          run_user: node.runUser,
          host_key_fingerprint: node.hostKeyFingerprint,
        }
      : null,
    state: node.clusterId ? 'allocated' : node.releasingClusterId ? 'releasing' : 'free',
    cluster_id: node.clusterId,
    releasing_cluster_id: node.releasingClusterId,
    created_at: iso(node.createdAt),
  };
}

export function rateCardView(card: RateCardRow) {
  return {
    id: card.id,
    object: 'rate_card' as const,
    profile: card.profile,
    currency: card.currency,
    node_hour_price: formatDecimal(parseDecimal(card.nodeHourPrice)),
    gpu_hour_price: formatDecimal(parseDecimal(card.gpuHourPrice)),
    effective_from: iso(card.effectiveFrom),
    effective_to: iso(card.effectiveTo),
    created_at: iso(card.createdAt),
  };
}

export function conversionRateView(rate: ConversionRateRow) {
  return {
    object: 'conversion_rate' as const,
    base: rate.base,
    quote: rate.quote,
    effective_on: rate.effectiveOn,
    rate: formatDecimal(parseDecimal(rate.rate)),
    updated_at: iso(rate.updatedAt),
  };
}
