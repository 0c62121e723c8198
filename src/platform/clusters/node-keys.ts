import type { clusterNodeKeys } from '../../shared/db/schema.js';

/**
 * A cluster's key on one node: to install or to remove, and how far it got (`identity.ts` works
 * through them).
 */
export type NodeKeyRow = typeof clusterNodeKeys.$inferSelect;

/** The rows a new cluster needs: one install per node the platform can reach. */
export function installRows(
  clusterId: string,
  held: Array<{ id: string; sshCredential: string | null }>,
): Array<typeof clusterNodeKeys.$inferInsert> {
  return held
    .filter((node) => node.sshCredential !== null)
    .map((node) => ({ clusterId, nodeId: node.id, action: 'install' as const }));
}

/**
 * How the cluster's key stands on one node: `unmanaged` where the platform has no access to install
 * it.
 */
export interface NodeIdentity {
  state: 'installing' | 'installed' | 'failed' | 'unmanaged';
  error: string | null;
  attempts: number;
}

/**
 * A cluster's status from its key rows, as the API and the portal show it:
 * `provisioning` while its key is not on every node the platform reaches,
 * `ready` once it is, `deleted` after; and each node's identity.
 *
 * @example
 * const { status, nodeIdentity } = identityOf(cluster.state, await identity.rowsOf(cluster.id));
 */
export function identityOf(
  clusterState: string,
  keys: NodeKeyRow[],
): { status: 'provisioning' | 'ready' | 'deleted'; nodeIdentity(nodeId: string): NodeIdentity } {
  const installs = keys.filter((key) => key.action === 'install');
  const status =
    clusterState === 'deleted' ? 'deleted' : installs.some((key) => key.state !== 'done') ? 'provisioning' : 'ready';
  return {
    status,
    nodeIdentity(nodeId) {
      const key = installs.find((row) => row.nodeId === nodeId);
      if (!key) return { state: 'unmanaged', error: null, attempts: 0 };
      return {
        state: key.state === 'done' ? 'installed' : key.state === 'failed' ? 'failed' : 'installing',
        error: key.error,
        attempts: key.attempts,
      };
    },
  };
}
