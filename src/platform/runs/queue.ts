import { and, eq, inArray } from 'drizzle-orm';
import type { ClusterRow, ClusterService } from '../clusters/service.js';
import type { Database } from '../../shared/db/client.js';
import { runs } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Actor } from '../people/permissions.js';
import type { StackCatalog, StackRow } from '../stacks/service.js';

/**
 * What asking to apply a stack takes: the stack, the target (the whole cluster, or one of its
 * nodes), and the inputs.
 */
export interface RunRequest {
  clusterId: string;
  /** The stack's name, or its id. */
  stackName: string;
  nodeId?: string;
  inputs: Record<string, unknown>;
}

/**
 * What a run may be queued against, or the error that says why not: a running cluster `actor` may
 * see, with its key on every node; a stack visible to `actor` in the cluster's organization that
 * applies to the cluster's profile; and, when one is named, a node of that cluster.
 */
export async function checkRunTarget(
  clusters: ClusterService,
  stacks: StackCatalog,
  actor: Actor,
  request: RunRequest,
): Promise<{ cluster: ClusterRow; stack: StackRow }> {
  const { cluster, nodes } = await clusters.get(request.clusterId, actor.platformAdmin ? null : actor.orgId);
  if (cluster.state !== 'running') throw new GatewayError('conflict', `Cluster ${cluster.id} is deleted.`);
  const pending = await clusters.keysPending(cluster.id);
  if (pending.length > 0) {
    throw new GatewayError(
      'conflict',
      `Cluster ${cluster.id} is still provisioning: its access key is not on every node yet. Apply again once it is ready.`,
      {
        details: pending.map((node) => ({
          field: `nodes.${node.nodeId}`,
          message: node.error ?? "Installing the cluster's key.",
        })),
      },
    );
  }
  // Only a stack of the cluster's organization (or a global one): a platform admin applies no other
  // organization's private stack here.
  const stack = await stacks.get(actor, request.stackName, { orgId: cluster.orgId });
  if (stack.applicableProfiles && !stack.applicableProfiles.includes(cluster.profile)) {
    throw new GatewayError('invalid_request', `Stack ${stack.name} does not apply to ${cluster.profile} clusters.`, {
      details: [
        {
          field: 'stack',
          message: `It applies to ${stack.applicableProfiles.join(', ') || 'no profile'}, not ${cluster.profile}.`,
        },
      ],
    });
  }
  if (request.nodeId !== undefined && !nodes.some((node) => node.id === request.nodeId)) {
    throw new GatewayError('invalid_request', `Node ${request.nodeId} is not in cluster ${cluster.id}.`, {
      details: [{ field: 'target.node_id', message: 'Not a node of this cluster.' }],
    });
  }
  return { cluster, stack };
}

/**
 * The 409 for a second run of a stack on a cluster while one is queued or running (the partial
 * unique index refused it), naming that run.
 */
export async function alreadyApplying(db: Database, clusterId: string, stackName: string): Promise<GatewayError> {
  const [active] = await db
    .select({ id: runs.id, state: runs.state })
    .from(runs)
    .where(
      and(eq(runs.clusterId, clusterId), eq(runs.stackName, stackName), inArray(runs.state, ['QUEUED', 'RUNNING'])),
    );
  return new GatewayError(
    'conflict',
    `Stack ${stackName} is being applied to this cluster already${active ? ` (run ${active.id}, ${active.state})` : ''}; wait for it to end or cancel it.`,
    {
      details: [{ field: 'stack', message: 'One run per cluster and stack at a time.' }],
    },
  );
}
