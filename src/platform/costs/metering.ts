import { and, eq, gt, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { clusters, hardwareProfiles, nodeAllocations } from '../../shared/db/schema.js';

/**
 * One node's allocation to a cluster, in whole seconds since the epoch.
 * Instants are truncated to the second (`floor`): allocation and release
 * alike, so splitting an allocation at any whole-second boundary (a month's
 * end, a price change) gives parts that add up to the whole, exactly.
 */
export interface MeteredAllocation {
  clusterId: string;
  clusterName: string;
  clusterState: 'running' | 'deleted';
  orgId: string;
  profile: string;
  gpusPerNode: number;
  start: number;
  /** null while the node is still allocated. */
  end: number | null;
}

/** A span of whole seconds, `start` inclusive, `end` exclusive. */
export interface Span {
  start: number;
  end: number;
}

const epochSeconds = (column: typeof nodeAllocations.allocatedAt | typeof nodeAllocations.releasedAt) =>
  sql<number>`floor(extract(epoch from ${column}))::bigint`.mapWith(Number);

/**
 * Every allocation that overlaps `[from, to)`, of one organization or (null)
 * all, with its cluster and its profile's GPUs per node: a deleted cluster's
 * allocations are closed but stay, so it stays in the windows it ran in.
 *
 * @example
 * const rows = await allocationsIn(db, { from, to }, orgId);
 */
export function allocationsIn(
  db: Database,
  window: { from: Date; to: Date },
  orgId: string | null,
): Promise<MeteredAllocation[]> {
  return db
    .select({
      clusterId: clusters.id,
      clusterName: clusters.name,
      clusterState: clusters.state,
      orgId: clusters.orgId,
      profile: nodeAllocations.profile,
      gpusPerNode: hardwareProfiles.gpusPerNode,
      start: epochSeconds(nodeAllocations.allocatedAt),
      end: epochSeconds(nodeAllocations.releasedAt),
    })
    .from(nodeAllocations)
    .innerJoin(clusters, eq(clusters.id, nodeAllocations.clusterId))
    .innerJoin(hardwareProfiles, eq(hardwareProfiles.name, nodeAllocations.profile))
    .where(
      and(
        lt(nodeAllocations.allocatedAt, window.to),
        or(isNull(nodeAllocations.releasedAt), gt(nodeAllocations.releasedAt, window.from)),
        orgId === null ? undefined : eq(clusters.orgId, orgId),
      ),
    );
}

/**
 * The part of an allocation inside the window and before `now` (a running
 * node has accrued only until now); null when nothing is left.
 */
export function clip(allocation: Pick<MeteredAllocation, 'start' | 'end'>, window: Span, now: number): Span | null {
  const start = Math.max(allocation.start, window.start);
  const end = Math.min(allocation.end ?? now, window.end, now);
  return end > start ? { start, end } : null;
}

/**
 * A span cut where rate cards start and end: each part with the card in force over it, or null
 * (unrated).
 */
export function splitByCards<C extends Span>(span: Span, cards: readonly C[]): { span: Span; card: C | null }[] {
  const covered = cards
    .map((card) => ({ card, start: Math.max(card.start, span.start), end: Math.min(card.end, span.end) }))
    .filter((part) => part.end > part.start)
    .sort((a, b) => a.start - b.start);
  const parts: { span: Span; card: C | null }[] = [];
  let at = span.start;
  for (const part of covered) {
    if (part.start > at) parts.push({ span: { start: at, end: part.start }, card: null });
    parts.push({ span: { start: part.start, end: part.end }, card: part.card });
    at = part.end;
  }
  if (at < span.end) parts.push({ span: { start: at, end: span.end }, card: null });
  return parts;
}
