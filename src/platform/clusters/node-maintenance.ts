import { and, eq, ne, sql } from 'drizzle-orm';
import type { Config } from '../../config/index.js';
import type { Database } from '../../shared/db/client.js';
import { clusterNodeKeys, nodes } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Logger } from '../../shared/http/log.js';
import type { ClusterIdentity } from './identity.js';
import { installRows } from './node-keys.js';
import { type NewNodeAccess, openCredential, requireSealingKey, verifiedAccess } from './node-access.js';
import type { NodeRow } from './service.js';

/**
 * What an operator does to a node after adding it: give it new SSH access
 * (a host key that legitimately changed, a new key or account), checked by
 * connecting once as when it was added; and free a node left `releasing`
 * (a deleted cluster's key could not be taken off it): retry the removal
 * now, or, with `force`, free it without removing the key.
 *
 * @example
 * await maintenance.changeAccess(nodeId, { hostKeyFingerprint: 'SHA256:…' });
 * await maintenance.release(nodeId, { force: false });
 */
export class NodeMaintenance {
  constructor(
    private readonly deps: { db: Database; config: Config['nodeAccess']; identity: ClusterIdentity; log: Logger },
  ) {}

  /**
   * Replaces a node's SSH access: what is not given is kept (the stored key,
   * opened). Checked by connecting once before anything is stored (400 saying
   * what failed); the key is sealed again and the new host key pinned. Work
   * waiting on the node (a key to install or remove) is retried at once; a
   * node that gains access while allocated gets its cluster's key.
   */
  async changeAccess(nodeId: string, change: Partial<NewNodeAccess>): Promise<NodeRow> {
    const { db, config, identity } = this.deps;
    const node = await this.node(nodeId);
    const key = requireSealingKey(config.credentialsKey);
    const ssh = merged(node, change, key);
    if (node.runUser && ssh.runUser !== node.runUser && (node.clusterId || node.releasingClusterId)) {
      const message = `Node ${nodeId} holds cluster ${node.clusterId ?? node.releasingClusterId}'s key for ${node.runUser}: change the run user when the node is free.`;
      throw new GatewayError('conflict', message, { details: [{ field: 'ssh.run_user', message }] });
    }
    const columns = await verifiedAccess(config, node.id, node.address, ssh);
    // The access note follows the SSH access when it was the one made from it.
    const access =
      node.access === `ssh://${node.sshUser}@${node.address}:${node.sshPort}` || node.access === ''
        ? `ssh://${ssh.user}@${node.address}:${ssh.port}`
        : node.access;
    const row = await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(nodes)
        .set({ ...columns, access })
        .where(eq(nodes.id, nodeId))
        .returning();
      await tx
        .update(clusterNodeKeys)
        .set({ nextAttemptAt: sql`now()` })
        .where(and(eq(clusterNodeKeys.nodeId, nodeId), ne(clusterNodeKeys.state, 'done')));
      if (updated!.clusterId)
        await tx
          .insert(clusterNodeKeys)
          .values(installRows(updated!.clusterId, [updated!]))
          .onConflictDoNothing();
      return updated!;
    });
    identity.poke();
    return row;
  }

  /**
   * Frees a node left `releasing`: removes the deleted cluster's key now (409
   * with why when it still cannot), or with `force` frees it at once without
   * removing the key, and logs a warning that the key may still let in.
   */
  async release(nodeId: string, options: { force: boolean }): Promise<NodeRow> {
    const { db, identity, log } = this.deps;
    const node = await this.node(nodeId);
    const clusterId = node.releasingClusterId;
    if (!clusterId)
      throw new GatewayError(
        'conflict',
        `Node ${nodeId} is not releasing: it is ${node.clusterId ? `allocated to cluster ${node.clusterId}` : 'free'}.`,
      );
    if (options.force) {
      await db.transaction(async (tx) => {
        await tx
          .update(clusterNodeKeys)
          .set({
            state: 'done',
            error: 'Released by the operator without removing the key.',
            claimedUntil: null,
            updatedAt: sql`now()`,
          })
          .where(and(eq(clusterNodeKeys.clusterId, clusterId), eq(clusterNodeKeys.nodeId, nodeId)));
        await tx
          .update(nodes)
          .set({ releasingClusterId: null })
          .where(and(eq(nodes.id, nodeId), eq(nodes.releasingClusterId, clusterId)));
      });
      log.warn(
        "a node was released without removing a deleted cluster's key: the key may still log in as its run user",
        { nodeId, clusterId, address: node.address, runUser: node.runUser },
      );
      return this.node(nodeId);
    }
    const row = await identity.retryNow(clusterId, nodeId);
    // No row: nothing of the cluster's is on the node to remove.
    if (!row)
      await db
        .update(nodes)
        .set({ releasingClusterId: null })
        .where(and(eq(nodes.id, nodeId), eq(nodes.releasingClusterId, clusterId)));
    const after = await this.node(nodeId);
    if (after.releasingClusterId !== clusterId) return after;
    const why = row?.error ?? 'another gateway process is still trying.';
    throw new GatewayError(
      'conflict',
      `Cluster ${clusterId}'s key could not be removed from node ${nodeId}: ${why} Fix the node's access (PATCH /admin/v1/nodes/${nodeId}) and release it again, or release it with force to free it without removing the key.`,
      { details: [{ field: 'node', message: why }] },
    );
  }

  private async node(nodeId: string): Promise<NodeRow> {
    const [node] = await this.deps.db.select().from(nodes).where(eq(nodes.id, nodeId));
    if (!node) throw new GatewayError('not_found', `Node ${nodeId} does not exist.`);
    return node;
  }
}

/**
 * The node's access with the change applied: what is not given is kept; a node without access must
 * be given all of it.
 */
function merged(node: NodeRow, change: Partial<NewNodeAccess>, key: Buffer): NewNodeAccess {
  const user = change.user ?? node.sshUser;
  const privateKey = change.privateKey ?? (node.sshCredential ? storedKey(node.id, node.sshCredential, key) : null);
  const hostKeyFingerprint = change.hostKeyFingerprint ?? node.hostKeyFingerprint;
  const missing = [
    !user && 'ssh.user',
    !privateKey && 'ssh.private_key',
    !hostKeyFingerprint && 'ssh.host_key_fingerprint',
  ].filter((field): field is string => typeof field === 'string');
  if (missing.length > 0) {
    throw new GatewayError('invalid_request', `Node ${node.id} has no SSH access yet: give all of it.`, {
      details: missing.map((field) => ({ field, message: 'Required.' })),
    });
  }
  return {
    user: user!,
    port: change.port ?? node.sshPort ?? 22,
    privateKey: privateKey!,
    hostKeyFingerprint: hostKeyFingerprint!,
    runUser: change.runUser ?? node.runUser ?? user!,
  };
}

function storedKey(nodeId: string, sealed: string, key: Buffer): string {
  try {
    return openCredential(key, nodeId, sealed);
  } catch {
    const message =
      "The node's stored key does not open with this gateway's TOLLGATE_NODE_CREDENTIALS_KEY: give it again.";
    throw new GatewayError('invalid_request', message, { details: [{ field: 'ssh.private_key', message }] });
  }
}
