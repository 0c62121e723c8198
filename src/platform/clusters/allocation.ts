import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { isUniqueViolation } from '../../shared/db/errors.js';
import { newId } from '../../shared/db/ids.js';
import { clusterNodeKeys, clusters, nodeAllocations, nodes, organizations } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { installRows } from './node-keys.js';
import { assertNotNested } from './public-domains.js';

export type ClusterRow = typeof clusters.$inferSelect;
export type NodeRow = typeof nodes.$inferSelect;

export interface NewCluster {
  orgId: string;
  name: string;
  profile: string;
  nodeCount: number;
  publicDomain: string;
  createdBy: string | null;
}

/**
 * A cluster made and its nodes taken, in one transaction: the free nodes of its profile are locked
 * as they are taken (`FOR UPDATE SKIP LOCKED`), so two clusters made at once never share a node,
 * and a request for more nodes than are free takes none (409). Its public domain is checked against
 * every live cluster's (the gateway's own hosts are the caller's to check, before anything is
 * read).
 *
 * @example
 * const { cluster, nodes } = await allocateCluster(db, input);
 */
export async function allocateCluster(
  db: Database,
  input: NewCluster,
): Promise<{ cluster: ClusterRow; nodes: NodeRow[] }> {
  const publicDomain = input.publicDomain.toLowerCase();
  return db.transaction(async (tx) => {
    const [org] = await tx
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.id, input.orgId));
    if (!org) throw new GatewayError('not_found', `Organization ${input.orgId} does not exist.`);
    await assertNotNested(tx, publicDomain);
    const free = await tx
      .select()
      .from(nodes)
      .where(and(eq(nodes.profile, input.profile), isNull(nodes.clusterId), isNull(nodes.releasingClusterId)))
      .orderBy(asc(nodes.address))
      .limit(input.nodeCount)
      .for('update', { skipLocked: true });
    if (free.length < input.nodeCount) {
      throw new GatewayError(
        'conflict',
        `Only ${free.length} free ${input.profile} nodes; the cluster needs ${input.nodeCount}.`,
        {
          details: [{ field: 'nodes', message: `At most ${free.length} are free.` }],
        },
      );
    }
    const id = newId('cls');
    const [cluster] = await tx
      .insert(clusters)
      .values({
        id,
        orgId: input.orgId,
        name: input.name,
        profile: input.profile,
        publicDomain,
        createdBy: input.createdBy,
      })
      .returning()
      .catch((error: unknown) => {
        // Said the same whoever holds it: the answer tells nothing of another organization.
        throw conflictOn(error, 'public_domain', `The public domain ${publicDomain} is taken; choose another.`);
      });
    const ids = free.map((node) => node.id);
    const taken = await tx.update(nodes).set({ clusterId: id }).where(inArray(nodes.id, ids)).returning();
    const rows = installRows(id, taken);
    if (rows.length > 0) await tx.insert(clusterNodeKeys).values(rows);
    // now() is the transaction's start: the same instant, to the microsecond, as the cluster's
    // created_at.
    await tx
      .insert(nodeAllocations)
      .values(ids.map((nodeId) => ({ clusterId: id, nodeId, profile: input.profile, allocatedAt: sql`now()` })));
    return { cluster: cluster!, nodes: taken.sort((a, b) => a.address.localeCompare(b.address)) };
  });
}

/** A unique violation as a 409 naming `field`; any other error as it is. */
export function conflictOn(error: unknown, field: string, message: string): unknown {
  return isUniqueViolation(error) ? new GatewayError('conflict', message, { details: [{ field, message }] }) : error;
}
