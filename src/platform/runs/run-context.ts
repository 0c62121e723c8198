import type { ClusterRow, NodeRow } from '../clusters/service.js';
import type { Config } from '../../config/index.js';
import type { RunRow } from './service.js';
import type { EgressPolicy } from './sandbox/egress.js';
import type { ClusterContext } from './workspace.js';

/**
 * What a run is given: its cluster and the key to reach it, where it may connect, and its tool's
 * environment.
 */

/**
 * What the run's module is told of its cluster (`workspace.ts`): the cluster, its nodes, the
 * target, and the key to reach them.
 */
export function clusterContext(
  run: RunRow,
  cluster: ClusterRow,
  nodes: NodeRow[],
  sshProxy: ClusterContext['sshProxy'],
  key: { publicKey: string; privateKey: string },
): ClusterContext {
  return {
    runId: run.id,
    clusterId: cluster.id,
    clusterName: cluster.name,
    publicDomain: cluster.publicDomain,
    nodeAddresses: nodes.map((node) => node.address),
    targetNode: nodes.find((node) => node.id === run.nodeId)?.address ?? '',
    nodes: nodes.map((node) => ({
      id: node.id,
      address: node.address,
      sshUser: node.runUser ?? '',
      sshPort: node.sshPort ?? 22,
      hostKey: node.hostKey ?? '',
    })),
    sshProxy,
    sshPublicKey: key.publicKey,
    sshPrivateKey: key.privateKey,
  };
}

/**
 * Where a run may connect: its cluster's nodes, each on the operator's node ports and its SSH port,
 * and the operator's allowed hosts.
 */
export function egressPolicy(nodes: NodeRow[], egress: Config['runs']['egress']): EgressPolicy {
  return {
    nodes: nodes.map((node) => ({
      address: node.address,
      ports: [...new Set([...egress.nodePorts, node.sshPort ?? 22])],
    })),
    hosts: egress.hosts,
  };
}

/**
 * The tool's whole environment: never the gateway's own (it holds database URLs and tokens), only
 * what OpenTofu needs and what the operator passes.
 */
export function toolEnvironment(config: Config['runs']): Record<string, string> {
  return {
    PATH: config.searchPath,
    HOME: config.workDir,
    LANG: 'C.UTF-8',
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
    CHECKPOINT_DISABLE: '1',
    ...config.passEnv,
  };
}
