import type { LoadScraper } from './scraper.js';

// How many more sequences a model's replicas can take from this gateway: what
// flow control (`gateway/flow/`) dispatches against, and which replicas the
// router may choose while some are full.

/** A replica as room is counted on it: its id and this gateway's requests in flight on it. */
export interface RoomReplica {
  id: string;
  inFlight: number;
}

/**
 * One replica's batch size: the engine definition's `max_num_seqs`, else what its engine says or
 * showed of itself, or until then what it is seen running plus a few (`LoadScraper.capacityOf`);
 * null when it was never scraped.
 */
export function capacityOf(
  replicaId: string,
  configured: number | undefined,
  scraper: LoadScraper | null,
): number | null {
  return configured ?? scraper?.capacityOf(replicaId) ?? null;
}

/**
 * The sequences `replicas` can take beyond what runs or waits on them from other gateways: the sum
 * of each one's capacity less others' requests (this gateway's own are counted by flow control).
 * Null when a replica's capacity is unknown, or none is ready: then nothing waits in the gateway,
 * as before flow control.
 */
export function slotsFor(
  replicas: readonly RoomReplica[],
  configured: number | undefined,
  scraper: LoadScraper | null,
): number | null {
  if (replicas.length === 0) return null;
  let slots = 0;
  for (const replica of replicas) {
    const capacity = capacityOf(replica.id, configured, scraper);
    if (capacity === null) return null;
    slots += Math.max(0, capacity - (scraper?.othersOf(replica.id) ?? 0));
  }
  return slots;
}

/**
 * Of `replicas`, those with room for one more request (all of them when none has, or room is
 * unknown); only `handed` when it is among them (a slot another gateway freed there for this one).
 */
export function withRoom<T extends RoomReplica>(
  replicas: T[],
  configured: number | undefined,
  scraper: LoadScraper | null,
  handed?: string,
): T[] {
  const given = handed === undefined ? undefined : replicas.find((replica) => replica.id === handed);
  if (given) return [given];
  const open = replicas.filter((replica) => {
    const capacity = capacityOf(replica.id, configured, scraper);
    return capacity === null || replica.inFlight + (scraper?.othersOf(replica.id) ?? 0) < capacity;
  });
  return open.length > 0 ? open : replicas;
}
