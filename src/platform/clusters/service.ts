import { and, asc, count, desc, eq, inArray, isNull, ne, sql } from 'drizzle-orm';
import type { Config } from '../../config/index.js';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { clusterNodeKeys, clusters, hardwareProfiles, nodeAllocations, nodes } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { type NewNodeAccess, verifiedAccess } from './node-access.js';
import { assertNotReserved } from './public-domains.js';
import { allocateCluster, type ClusterRow, conflictOn, type NewCluster, type NodeRow } from './allocation.js';

export type { ClusterRow, NewCluster, NodeRow } from './allocation.js';

export type ProfileRow = typeof hardwareProfiles.$inferSelect;

export interface NewProfile {
  name: string;
  gpusPerNode: number;
  gpuModel?: string;
  cpuCores?: number;
  memoryGib?: number;
}

/** What a new cluster's key needs: `ClusterIdentity` fits it. */
export interface ClusterKeyInstaller {
  /** The cluster's key pair, made and kept the first time. */
  keyOf(clusterId: string): Promise<unknown>;
  /** Installs what is due now rather than at the next poll. */
  poke(): void;
}

/**
 * Hardware profiles and nodes (the operator's), and organizations' clusters:
 * creating a cluster allocates free nodes of its profile, deleting it
 * releases them, and each allocation keeps its exact start and end
 * (`node_allocations`, what the cost reports meter).
 *
 * @example
 * const cluster = await clusterService.create({ orgId, name: 'training', profile: 'a100x8', nodeCount: 2, publicDomain: 'train.example.com', createdBy: userId });
 */
export class ClusterService {
  constructor(
    private readonly db: Database,
    private readonly options: {
      nodeAccess: Config['nodeAccess'];
      /** The gateway's own host names: no cluster's public URLs may take one. */
      reservedHosts: string[];
      /**
       * Who puts a new cluster's key on its nodes (`identity.ts`); none in tests of the rules
       * alone.
       */
      identity?: ClusterKeyInstaller;
    } = { nodeAccess: { sshTimeoutMs: 10_000 }, reservedHosts: [] },
  ) {}

  async addProfile(profile: NewProfile): Promise<ProfileRow> {
    try {
      const [row] = await this.db.insert(hardwareProfiles).values(profile).returning();
      return row!;
    } catch (error) {
      throw conflictOn(error, 'name', `A profile named ${profile.name} exists already.`);
    }
  }

  listProfiles(): Promise<ProfileRow[]> {
    return this.db.select().from(hardwareProfiles).orderBy(asc(hardwareProfiles.name));
  }

  /**
   * Adds a node. With `ssh`, the platform connects once (the host key must
   * match the pinned fingerprint, the key must be accepted, a command must
   * run) before anything is stored; the key is stored sealed and the host
   * key pinned. A failure is a 400 saying what failed.
   */
  async addNode(node: { profile: string; address: string; access?: string; ssh?: NewNodeAccess }): Promise<NodeRow> {
    await this.profile(node.profile);
    const id = newId('node');
    const sshColumns = node.ssh ? await verifiedAccess(this.options.nodeAccess, id, node.address, node.ssh) : {};
    const access = node.access ?? (node.ssh ? `ssh://${node.ssh.user}@${node.address}:${node.ssh.port}` : '');
    try {
      const [row] = await this.db
        .insert(nodes)
        .values({ id, profile: node.profile, address: node.address, access, ...sshColumns })
        .returning();
      return row!;
    } catch (error) {
      throw conflictOn(error, 'address', `A node at ${node.address} exists already.`);
    }
  }

  listNodes(): Promise<NodeRow[]> {
    return this.db.select().from(nodes).orderBy(asc(nodes.profile), asc(nodes.address));
  }

  /**
   * Creates a cluster with `nodeCount` free nodes of its profile, in one
   * transaction: the free nodes are locked as they are taken (`FOR UPDATE
   * SKIP LOCKED`), so two clusters created at once never share a node, and a
   * request for more nodes than are free takes none (409). The cluster's
   * key pair exists (kept sealed) before this returns, and its installation
   * on the nodes starts now rather than at the next poll.
   */
  async create(input: NewCluster): Promise<{ cluster: ClusterRow; nodes: NodeRow[] }> {
    assertNotReserved(this.options.reservedHosts, input.publicDomain.toLowerCase());
    await this.profile(input.profile);
    const created = await allocateCluster(this.db, input);
    const { identity } = this.options;
    if (identity) {
      await identity.keyOf(created.cluster.id);
      identity.poke();
    }
    return created;
  }

  /**
   * A running or deleted cluster, with its nodes (none once deleted); 404 when `orgId` is given and
   * it is another's.
   */
  async get(id: string, orgId: string | null): Promise<{ cluster: ClusterRow; nodes: NodeRow[] }> {
    const [cluster] = await this.db
      .select()
      .from(clusters)
      .where(and(eq(clusters.id, id), orgId === null ? undefined : eq(clusters.orgId, orgId)));
    if (!cluster) throw new GatewayError('not_found', `Cluster ${id} does not exist.`);
    const held = await this.db.select().from(nodes).where(eq(nodes.clusterId, id)).orderBy(asc(nodes.address));
    return { cluster, nodes: held };
  }

  /**
   * One page of clusters, of one organization or (null) all, newest first; deleted ones only when
   * asked.
   */
  async list(
    orgId: string | null,
    page: { offset: number; limit: number; includeDeleted: boolean },
  ): Promise<{ rows: ClusterRow[]; total: number }> {
    const where = and(
      orgId === null ? undefined : eq(clusters.orgId, orgId),
      page.includeDeleted ? undefined : eq(clusters.state, 'running'),
    );
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(clusters).where(where);
    const rows = await this.db
      .select()
      .from(clusters)
      .where(where)
      .orderBy(desc(clusters.createdAt), desc(clusters.id))
      .limit(page.limit)
      .offset(page.offset);
    return { rows, total };
  }

  /**
   * Deletes a cluster: its nodes are free again and their allocations closed at this instant, in
   * one transaction. Deleting twice is 404.
   */
  async delete(id: string, orgId: string | null): Promise<ClusterRow> {
    return this.db.transaction(async (tx) => {
      const [cluster] = await tx
        .update(clusters)
        .set({ state: 'deleted', deletedAt: sql`now()` })
        .where(
          and(
            eq(clusters.id, id),
            eq(clusters.state, 'running'),
            orgId === null ? undefined : eq(clusters.orgId, orgId),
          ),
        )
        .returning();
      if (!cluster) throw new GatewayError('not_found', `Cluster ${id} does not exist.`);
      // A node with the cluster's key on it is not free until the key is removed
      // (ClusterIdentity.removeNow).
      const keyed = (
        await tx
          .select({ nodeId: clusterNodeKeys.nodeId })
          .from(clusterNodeKeys)
          .where(eq(clusterNodeKeys.clusterId, id))
      ).map((row) => row.nodeId);
      if (keyed.length > 0) {
        await tx
          .update(nodes)
          .set({ releasingClusterId: id })
          .where(and(eq(nodes.clusterId, id), inArray(nodes.id, keyed)));
        await tx
          .update(clusterNodeKeys)
          .set({
            action: 'remove',
            state: 'pending',
            attempts: 0,
            error: null,
            nextAttemptAt: sql`now()`,
            updatedAt: sql`now()`,
          })
          .where(eq(clusterNodeKeys.clusterId, id));
      }
      await tx.update(nodes).set({ clusterId: null }).where(eq(nodes.clusterId, id));
      await tx
        .update(nodeAllocations)
        .set({ releasedAt: sql`now()` })
        .where(and(eq(nodeAllocations.clusterId, id), isNull(nodeAllocations.releasedAt)));
      return cluster;
    });
  }

  /**
   * The nodes whose copy of the cluster's key is not installed yet, with why (the last failure),
   * for a 409 that says so.
   */
  async keysPending(clusterId: string): Promise<Array<{ nodeId: string; error: string | null }>> {
    return this.db
      .select({ nodeId: clusterNodeKeys.nodeId, error: clusterNodeKeys.error })
      .from(clusterNodeKeys)
      .where(
        and(
          eq(clusterNodeKeys.clusterId, clusterId),
          eq(clusterNodeKeys.action, 'install'),
          ne(clusterNodeKeys.state, 'done'),
        ),
      );
  }

  /** The allocations of a cluster, oldest first (for the cost reports and tests). */
  allocations(clusterId: string) {
    return this.db
      .select()
      .from(nodeAllocations)
      .where(eq(nodeAllocations.clusterId, clusterId))
      .orderBy(asc(nodeAllocations.id));
  }

  private async profile(name: string): Promise<ProfileRow> {
    const [row] = await this.db.select().from(hardwareProfiles).where(eq(hardwareProfiles.name, name));
    if (!row)
      throw new GatewayError('invalid_request', `There is no hardware profile ${name}.`, {
        details: [{ field: 'profile', message: `Unknown profile ${name}.` }],
      });
    return row;
  }
}
